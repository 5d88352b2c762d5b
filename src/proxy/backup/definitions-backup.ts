import type { EventEmitter } from 'node:events';
import { Counter, Gauge, type Registry } from 'prom-client';
import { InMemStorageProvider, type ClientFeaturesResponse } from 'unleash-client';
import type { StorageProvider } from '../upstream/sdk/types';
import type { Logger } from '../../common/logging/logger';
import { RateLimitedLog } from '../../common/logging/rate-limited-log';
import type { BackupFault, BackupRecord } from './backup-record';
import type { BackupStore, BackupStoreHooks } from './backup-store';
import type { StoredToken } from './stored-tokens';

/** Where validated tokens come from and go back to: the token validator. */
export interface ValidatedTokenSource {
  keptTokens(): StoredToken[];
  seedAccepted(tokens: readonly StoredToken[]): void;
  onKeptTokensChange(listener: () => void): void;
}

/** How long a starting replica waits for the upstream's first answer before it looks at the backup. */
const FIRST_FETCH_GRACE_MS = 5_000;
const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;
/** Validated tokens changing are written at most this often (each write is the whole record). */
const TOKENS_WRITE_DELAY_MS = 1_000;

export function describeAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/**
 * The shared backup of flag definitions. Every replica writes the definitions it accepts from the
 * upstream; a replica whose upstream does not answer at start becomes ready from it. Ordering with
 * the SDK: the backup is offered as the SDK repository's storage provider, whose `get` (called once
 * at start, beside the first fetch) waits for that first fetch to fail (or a grace period) before it
 * reads Redis, and returns nothing once the upstream answered. The SDK applies a stored backup only
 * while it is not ready and always lets an upstream answer replace it, so live definitions win.
 */
export class DefinitionsBackup {
  private readonly redis: BackupStore;
  private readonly log: RateLimitedLog;
  private readonly errors: Counter<'kind'>;
  private readonly age: Gauge<'origin'>;
  private readonly inUse: Gauge;
  /** The newest record this replica wrote or started from, and which of the two. */
  private newest: { record: BackupRecord; origin: 'written' | 'read' } | undefined;
  private upstreamAnswered = false;
  private serving = false;
  private firstOutcome: (() => void) | undefined;
  private readonly firstFetch: Promise<void>;
  private wake: (() => void) | undefined;
  private closed = false;
  private faulted = false;
  private tokens: { source: ValidatedTokenSource; environment: string } | undefined;
  /** Tokens read from the backup before a source was attached. */
  private restoredTokens: StoredToken[] = [];
  private tokensTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: (hooks: BackupStoreHooks) => BackupStore,
    private readonly logger: Logger,
    private readonly graceMs = FIRST_FETCH_GRACE_MS,
  ) {
    this.log = new RateLimitedLog(logger, 60_000);
    this.errors = new Counter({
      name: 'flags_proxy_backup_errors_total',
      help: 'Failures of the definitions backup (Redis or BACKUP_FOLDER) by kind (connection, read, write, invalid: a stored value refused)',
      labelNames: ['kind'],
      registers: [],
    });
    const newest = () => this.newest;
    this.age = new Gauge({
      name: 'flags_proxy_backup_age_seconds',
      help: 'Seconds since the definitions of the newest backup this replica wrote or started from were fetched',
      labelNames: ['origin'],
      registers: [],
      aggregator: 'min',
      collect() {
        this.reset();
        const n = newest();
        if (n) this.set({ origin: n.origin }, Math.max(0, (Date.now() - n.record.fetchedAt) / 1000));
      },
    });
    const serving = () => this.serving;
    this.inUse = new Gauge({
      name: 'flags_proxy_backup_in_use',
      help: '1 while the definitions served came from the backup (Redis or BACKUP_FOLDER) because the upstream has not answered yet',
      registers: [],
      aggregator: 'max',
      collect() {
        this.set(serving() ? 1 : 0);
      },
    });
    this.firstFetch = new Promise((resolve) => (this.firstOutcome = resolve));
    this.redis = this.store({
      onFault: (kind, message) => this.fault(kind, message),
      onIgnored: (message) => {
        if (this.closed) return;
        this.errors.inc({ kind: 'invalid' });
        this.logger.warn(`${this.redis.label}: ${message}`);
      },
      onReady: () => {
        if (this.faulted) this.logger.info(`${this.redis.label}: connected again`);
        this.faulted = false;
      },
    });
  }

  private fault(kind: BackupFault, message: string): void {
    if (this.closed) return;
    this.errors.inc({ kind });
    if (kind !== 'invalid') this.faulted = true;
    this.log.warn(
      kind === 'invalid'
        ? `${this.redis.label}: ${message}`
        : `${this.redis.label} unavailable (${kind}): ${message}`,
      kind === 'invalid' ? 'invalid' : 'unavailable',
    );
  }

  register(registry: Registry): void {
    registry.registerMetric(this.errors);
    registry.registerMetric(this.age);
    registry.registerMetric(this.inUse);
  }

  /** Follows the SDK repository's events: an answer of the upstream ends any use of the backup. */
  watch(repository: EventEmitter): void {
    const answered = () => {
      this.upstreamAnswered = true;
      this.firstOutcome?.();
      this.wake?.();
      if (this.serving) {
        this.serving = false;
        this.logger.info(`the upstream answered: serving its definitions instead of the ${this.redis.label}`);
      }
    };
    repository.on('changed', answered);
    repository.on('unchanged', answered);
    repository.on('error', () => this.firstOutcome?.());
    repository.on('warn', () => this.firstOutcome?.());
  }

  /** Writes definitions just accepted from the upstream, with the validated tokens of the environment. */
  save(definitions: ClientFeaturesResponse): void {
    if (this.closed) return;
    this.newest = { record: this.redis.write(definitions, Date.now(), this.tokenList()), origin: 'written' };
  }

  /**
   * Keeps the tokens `source` validated for `environment` in this backup (as digests), written with
   * the definitions and again when they change; tokens read from the backup are handed to it.
   */
  keepTokens(source: ValidatedTokenSource, environment: string): void {
    this.tokens = { source, environment };
    if (this.restoredTokens.length > 0) source.seedAccepted(this.restoredTokens);
    this.restoredTokens = [];
    source.onKeptTokensChange(() => {
      if (this.closed || this.tokensTimer !== undefined) return;
      this.tokensTimer = setTimeout(() => {
        this.tokensTimer = undefined;
        const newest = this.newest;
        if (this.closed || newest === undefined) return;
        const { definitions, fetchedAt } = newest.record;
        newest.record = this.redis.write(definitions, fetchedAt, this.tokenList());
      }, TOKENS_WRITE_DELAY_MS).unref();
    });
  }

  private tokenList(): StoredToken[] {
    if (this.tokens === undefined) return [];
    const { source, environment } = this.tokens;
    return source.keptTokens().filter((t) => t.environment === environment);
  }

  private restore(tokens: readonly StoredToken[]): void {
    if (tokens.length === 0) return;
    if (this.tokens) this.tokens.source.seedAccepted(tokens);
    else this.restoredTokens = [...tokens];
  }

  /** The SDK's storage provider: `inner` (the user's, or in memory) first, then the shared backup. */
  storageProvider(
    inner: StorageProvider<ClientFeaturesResponse> = new InMemStorageProvider<ClientFeaturesResponse>(),
  ): StorageProvider<ClientFeaturesResponse> {
    return {
      set: (key, data) => inner.set(key, data),
      get: async (key) => {
        const own = await inner.get(key);
        if (own && own.features.length > 0) return own;
        return this.readWhenUpstreamFails();
      },
    };
  }

  private async readWhenUpstreamFails(): Promise<ClientFeaturesResponse | undefined> {
    await Promise.race([this.firstFetch, this.sleep(this.graceMs)]);
    let delay = RETRY_MIN_MS;
    while (!this.upstreamAnswered && !this.closed) {
      const record = await this.redis.read();
      if (this.upstreamAnswered || this.closed) return undefined;
      if (record && record.definitions.features.length > 0) {
        this.newest = { record, origin: 'read' };
        this.serving = true;
        this.restore(record.tokens);
        this.logger.warn(
          `the upstream has not answered: ready from the ${this.redis.label} (record ${record.digest.slice(0, 12)}, ${record.definitions.features.length} toggles, ${record.tokens.length} validated tokens, fetched ${describeAge(Date.now() - record.fetchedAt)} ago); switching to the upstream as soon as it answers`,
        );
        return record.definitions;
      }
      await this.sleep(delay);
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
    return undefined;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms).unref();
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.tokensTimer);
    this.wake?.();
    await this.redis.close();
  }
}
