import type { ApiResponse } from 'unleash-client/lib/feature';
import Repository, { type RepositoryOptions } from 'unleash-client/lib/repository';
import { clientFeaturesSchema, describeProblem } from './definitions-schema';

const REJECTED = /responded (401|403)\b/;
const MAX_RETRY_MS = 60_000;

export interface GuardedRepositoryOptions extends RepositoryOptions {
  /** When set, features of other projects are dropped locally whatever the upstream sends. */
  project?: string;
  /** Called once for every accepted definitions set; `fromApi` is false for a bootstrap. */
  onDefinitions: (fromApi: boolean) => void;
  /** Called when the upstream rejects the token (401/403); the repository retries by itself. */
  onRejected: (status: number, retryInMs: number) => void;
}

/**
 * The SDK's repository, hardened: a malformed upstream answer never replaces good definitions, and a
 * 401/403 (after which the SDK would stop polling for good) is retried with backoff.
 */
export class GuardedRepository extends Repository {
  private rejections = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly guardOptions: GuardedRepositoryOptions) {
    super(guardOptions);
    this.on('error', (err: unknown) => {
      const match = err instanceof Error ? REJECTED.exec(err.message) : null;
      if (match) this.scheduleRetry(Number(match[1]));
    });
    this.on('unchanged', () => {
      this.rejections = 0;
    });
  }

  override async save(response: ApiResponse, fromApi: boolean): Promise<void> {
    if (response.type === 'full') {
      const parsed = clientFeaturesSchema.safeParse(response);
      if (!parsed.success) {
        this.emit(
          'error',
          new Error(
            `upstream sent malformed definitions (${describeProblem(parsed.error)}); keeping the last good ones`,
          ),
        );
        return;
      }
      const project = this.guardOptions.project;
      if (project !== undefined) {
        response = {
          ...response,
          features: response.features.filter((f) => f.project === undefined || f.project === project),
        };
      }
    }
    this.rejections = 0;
    await super.save(response, fromApi);
    this.guardOptions.onDefinitions(fromApi);
  }

  private scheduleRetry(status: number): void {
    if (this.closed) return;
    this.rejections += 1;
    const base = Math.max(this.guardOptions.refreshInterval, 1000);
    const delay = Math.min(base * 2 ** Math.min(this.rejections - 1, 6), MAX_RETRY_MS);
    this.guardOptions.onRejected(status, delay);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      void this.fetch();
    }, delay);
  }

  override stop(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    super.stop();
    // The SDK drops every listener on stop; a fetch still in flight may emit an error afterwards,
    // which would be unhandled (and end the process) without this.
    this.on('error', () => undefined);
  }
}
