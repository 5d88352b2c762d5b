import { Redis } from 'ioredis';
import type { ClientFeaturesResponse } from 'unleash-client';
import { encodeRecord, type BackupFault, type BackupRecord, type RecordScope } from './backup-record';
import type { BackupStore } from './backup-store';
import { RecordChecker } from './record-checker';
import type { StoredToken } from './stored-tokens';

export { parseRecord, FUTURE_TOLERANCE_MS } from './backup-record';
export type { BackupFault, BackupRecord } from './backup-record';

export interface RedisStoreOptions {
  url: string;
  key: string;
  /** Whose definitions the key holds; a record of another scope is never served. */
  scope: RecordScope;
  /** Bound of every connect and command, so a slow Redis never holds anything up for long. */
  timeoutMs: number;
  /** Largest stored value read (`maxStoredDefinitionsBytes`); its length is asked before it is read. */
  maxBytes: number;
  onFault(kind: BackupFault, message: string): void;
  onIgnored(message: string): void;
  /** Called when the connection is (re-)established. */
  onReady(): void;
}

/**
 * Reads and writes one backup key. Never queues commands while disconnected (they fail at once),
 * bounds every connect and command, and reconnects in the background with back-off.
 */
export class RedisStore implements BackupStore {
  readonly label = 'Redis backup';
  private readonly redis: Redis;
  private readonly checker: RecordChecker;
  private pendingWrite: string | undefined;
  private closed = false;

  constructor(private readonly options: RedisStoreOptions) {
    this.checker = new RecordChecker(options.scope, options);
    this.redis = new Redis(options.url, {
      lazyConnect: true,
      connectTimeout: options.timeoutMs,
      commandTimeout: options.timeoutMs,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: (times) => Math.min(500 * 2 ** Math.min(times - 1, 6), 30_000),
    });
    this.redis.on('error', (err: Error) => options.onFault('connection', err.message));
    this.redis.on('ready', () => {
      options.onReady();
      const pending = this.pendingWrite;
      if (pending !== undefined) void this.set(pending);
    });
    this.redis.connect().catch(() => undefined); // reported through 'error'; retried by retryStrategy
  }

  /** The stored record; undefined when there is none, Redis is unreachable, or the value is garbage. */
  async read(): Promise<BackupRecord | undefined> {
    if (!(await this.whenConnected())) return undefined;
    let raw: string | null;
    try {
      // The length first: a value of hundreds of megabytes is never brought into memory.
      const length = await this.redis.strlen(this.options.key);
      if (length > this.options.maxBytes) {
        this.options.onFault(
          'invalid',
          `ignoring the backup in Redis: it is ${length} bytes, above maxStoredDefinitionsBytes (FLAGS_MAX_STORED_DEFINITIONS_BYTES) = ${this.options.maxBytes}`,
        );
        return undefined;
      }
      raw = await this.redis.get(this.options.key);
    } catch (err) {
      this.options.onFault('read', err instanceof Error ? err.message : String(err));
      return undefined;
    }
    if (raw === null) return undefined;
    return this.checker.check(raw, 'the backup in Redis');
  }

  /** Stores definitions; when Redis is away the newest one is kept and written once it is back. */
  write(definitions: ClientFeaturesResponse, fetchedAt: number, tokens?: StoredToken[]): BackupRecord {
    const { value, record } = encodeRecord(definitions, fetchedAt, this.options.scope, tokens);
    this.pendingWrite = value;
    if (this.redis.status === 'ready') void this.set(value);
    return record;
  }

  private async set(value: string): Promise<void> {
    try {
      await this.redis.set(this.options.key, value);
      if (this.pendingWrite === value) this.pendingWrite = undefined;
    } catch (err) {
      if (!this.closed) this.options.onFault('write', err instanceof Error ? err.message : String(err));
    }
  }

  private whenConnected(): Promise<boolean> {
    if (this.redis.status === 'ready') return Promise.resolve(true);
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (ok: boolean) => {
        clearTimeout(timer);
        this.redis.off('ready', onReady);
        resolve(ok);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), this.options.timeoutMs);
      this.redis.on('ready', onReady);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.redis.status === 'ready') {
      await Promise.race([
        this.redis.quit().catch(() => undefined),
        new Promise((resolve) => setTimeout(resolve, this.options.timeoutMs).unref()),
      ]);
    }
    this.redis.disconnect();
  }
}
