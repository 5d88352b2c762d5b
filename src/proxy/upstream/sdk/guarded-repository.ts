import type { ApiResponse, ClientFeaturesResponse } from 'unleash-client/lib/feature';
import Repository, { type RepositoryOptions } from 'unleash-client/lib/repository';
import type { StorageProvider } from 'unleash-client/lib/repository/storage-provider';
import { checkDocument, onlyProject } from '../definitions-document';
import { keepNamesAsData } from './internals';

const REJECTED = /responded (401|403)\b/;
const MAX_RETRY_MS = 60_000;

export interface GuardedRepositoryOptions extends RepositoryOptions {
  /** When set, features of other projects are dropped locally whatever the upstream sends. */
  project?: string;
  /** Called once for every accepted definitions set; `fromApi` is false for a bootstrap. */
  onDefinitions: (fromApi: boolean) => void;
  /**
   * Called when the upstream rejects the token (401/403); the repository retries by itself.
   * `attempt` counts the refusals since the last accepted fetch (1: the first of a run).
   */
  onRejected: (status: number, retryInMs: number, attempt: number) => void;
  /**
   * Called for every answer refused as a whole because it is not a definitions document (from the
   * upstream, a bootstrap or a stored backup); the last good definitions stay in use.
   */
  onRefused: (reason: string) => void;
  /** Called with the entries of an accepted answer that the SDK could not store (dropped alone). */
  onDropped: (entries: readonly string[], source: string) => void;
}

/**
 * The SDK's repository, hardened: an answer that is not a definitions document never replaces good
 * definitions, entries the SDK cannot store are dropped alone, every flag name is data (its toggle
 * map has no prototype), and a 401/403 (after which the SDK would stop polling for good) is retried
 * with backoff.
 */
export class GuardedRepository extends Repository {
  private rejections = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly guardOptions: GuardedRepositoryOptions) {
    super({ ...guardOptions, storageProvider: validatedStorage(guardOptions) });
    keepNamesAsData(this);
    keepPolling(this);
    this.on('error', (err: unknown) => {
      const match = err instanceof Error ? REJECTED.exec(err.message) : null;
      if (match) this.scheduleRetry(Number(match[1]));
    });
    this.on('unchanged', () => {
      this.rejections = 0;
    });
  }

  override async save(response: ApiResponse, fromApi: boolean): Promise<void> {
    const checked = checkDocument(response);
    if ('refused' in checked) {
      // Poll again for the whole answer instead of being told "not modified" about a refused one.
      this.etag = undefined;
      this.guardOptions.onRefused(`${fromApi ? 'upstream answer' : 'bootstrap'}: ${checked.refused}`);
      return;
    }
    if (checked.dropped.length > 0)
      this.guardOptions.onDropped(checked.dropped, fromApi ? 'upstream answer' : 'bootstrap');
    const project = this.guardOptions.project;
    const accepted = project === undefined ? checked.accepted : onlyProject(checked.accepted, project);
    this.rejections = 0;
    await super.save(accepted, fromApi);
    this.guardOptions.onDefinitions(fromApi);
  }

  private scheduleRetry(status: number): void {
    if (this.closed) return;
    this.rejections += 1;
    const base = Math.max(this.guardOptions.refreshInterval, 1000);
    const delay = Math.min(base * 2 ** Math.min(this.rejections - 1, 6), MAX_RETRY_MS);
    this.guardOptions.onRejected(status, delay, this.rejections);
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

/**
 * The configured storage, whose stored definitions go through the same checks: the SDK loads a
 * backup straight into its toggles, without `save`.
 */
function validatedStorage(options: GuardedRepositoryOptions): StorageProvider<ClientFeaturesResponse> {
  const storage = options.storageProvider;
  return {
    set: (key, data) => storage.set(key, data),
    get: async (key) => {
      const content = await storage.get(key);
      if (content === undefined) return undefined;
      const checked = checkDocument({ ...content, type: 'full' });
      if ('refused' in checked) {
        options.onRefused(`stored backup: ${checked.refused}`);
        return undefined;
      }
      if (checked.dropped.length > 0) options.onDropped(checked.dropped, 'stored backup');
      const accepted =
        options.project === undefined ? checked.accepted : onlyProject(checked.accepted, options.project);
      return accepted as ClientFeaturesResponse;
    },
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null;

/**
 * Refuses the SDK's switch to streaming: an upstream answering with `fetch-mode: streaming` makes the
 * SDK drop that answer and open an event stream of delta updates. Without the switch callback, the
 * SDK's polling fetcher (which shares its options object with the adaptive fetcher) ignores the
 * header and keeps using full answers, all of which go through `save`.
 */
function keepPolling(repository: Repository): void {
  const fetcher: unknown = Reflect.get(repository, 'fetcher');
  const options: unknown = isRecord(fetcher) ? fetcher.options : undefined;
  if (!isRecord(options) || typeof options.onModeChange !== 'function') {
    throw new Error('unleash-client changed: cannot keep its repository from switching to streaming');
  }
  options.onModeChange = undefined;
}
