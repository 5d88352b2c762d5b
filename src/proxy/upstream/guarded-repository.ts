import type { ApiResponse, ClientFeaturesResponse } from 'unleash-client/lib/feature';
import Repository, { type RepositoryOptions } from 'unleash-client/lib/repository';
import type { StorageProvider } from 'unleash-client/lib/repository/storage-provider';
import {
  clientFeaturesSchema,
  describeDefinitionsProblem,
  type DefinitionsProblem,
} from './definitions-schema';

const REJECTED = /responded (401|403)\b/;
const MAX_RETRY_MS = 60_000;

export interface GuardedRepositoryOptions extends RepositoryOptions {
  /** When set, features of other projects are dropped locally whatever the upstream sends. */
  project?: string;
  /** Called once for every accepted definitions set; `fromApi` is false for a bootstrap. */
  onDefinitions: (fromApi: boolean) => void;
  /** Called when the upstream rejects the token (401/403); the repository retries by itself. */
  onRejected: (status: number, retryInMs: number) => void;
  /**
   * Called for every refused definitions set (from the upstream, a bootstrap or a stored backup);
   * the last good definitions stay in use. `problem.message` names the toggle and the field.
   */
  onRefused: (problem: DefinitionsProblem) => void;
}

/** Why an answer in the delta format is refused: the proxy polls for full answers only. */
const DELTA_REFUSED: DefinitionsProblem = {
  toggle: undefined,
  segment: undefined,
  path: 'events',
  problem: 'a delta answer, where the proxy polls for full answers only',
  message: 'answer at events: a delta answer, where the proxy polls for full answers only',
};

/**
 * The SDK's repository, hardened: a malformed upstream answer never replaces good definitions, and a
 * 401/403 (after which the SDK would stop polling for good) is retried with backoff.
 */
export class GuardedRepository extends Repository {
  private rejections = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly guardOptions: GuardedRepositoryOptions) {
    super({ ...guardOptions, storageProvider: validatedStorage(guardOptions) });
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
    const problem = refusal(response);
    if (problem) {
      // Poll again for the whole answer instead of being told "not modified" about a refused one.
      this.etag = undefined;
      this.guardOptions.onRefused(problem);
      return;
    }
    const project = this.guardOptions.project;
    if (project !== undefined && response.type === 'full') {
      response = {
        ...response,
        features: response.features.filter((f) => f.project === undefined || f.project === project),
      };
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

/** The first problem of an answer, or undefined when it may replace the last good definitions. */
function refusal(response: ApiResponse): DefinitionsProblem | undefined {
  if (response.type !== 'full') return DELTA_REFUSED;
  const parsed = clientFeaturesSchema.safeParse(response);
  return parsed.success ? undefined : describeDefinitionsProblem(response, parsed.error);
}

/**
 * The configured storage, whose stored definitions go through the same validation: the SDK loads a
 * backup straight into its toggles, without `save`.
 */
function validatedStorage(options: GuardedRepositoryOptions): StorageProvider<ClientFeaturesResponse> {
  const storage = options.storageProvider;
  return {
    set: (key, data) => storage.set(key, data),
    get: async (key) => {
      const content = await storage.get(key);
      if (content === undefined) return undefined;
      const problem = refusal({ ...content, type: 'full' });
      if (!problem) return content;
      options.onRefused({ ...problem, message: `stored backup: ${problem.message}` });
      return undefined;
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
