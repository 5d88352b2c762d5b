import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import type { ClientFeaturesResponse } from 'unleash-client';
import { checkDocument } from '../upstream/definitions-document';

/** One backup of flag definitions as stored in Redis. */
export interface BackupRecord {
  /** SHA-256 of the definitions' JSON: the revision, the same on every replica for the same definitions. */
  digest: string;
  /** Epoch ms when the replica that wrote it accepted these definitions from the upstream. */
  fetchedAt: number;
  definitions: ClientFeaturesResponse;
}

/** What went wrong talking to Redis; `invalid` is a stored value refused as garbage. */
export type BackupFault = 'connection' | 'read' | 'write' | 'invalid';

export interface RedisStoreOptions {
  url: string;
  key: string;
  /** Bound of every connect and command, so a slow Redis never holds anything up for long. */
  timeoutMs: number;
  /** Largest stored value read (`maxStoredDefinitionsBytes`); its length is asked before it is read. */
  maxBytes: number;
  onFault(kind: BackupFault, message: string): void;
  /** Called when the connection is (re-)established. */
  onReady(): void;
}

const FORMAT = 1;

/**
 * How far ahead of this replica's clock a backup's `fetchedAt` may be (the clocks of two replicas
 * differ a little); beyond it the backup is not trusted: its age would read as 0 s for ever.
 */
export const FUTURE_TOLERANCE_MS = 60_000;
/** No backup was written before this: an older `fetchedAt` is garbage. */
const EARLIEST_FETCHED_AT = Date.UTC(2000, 0, 1);

export function digestOf(definitionsJson: string): string {
  return createHash('sha256').update(definitionsJson).digest('hex');
}

/** The stored value, checked as definitions from the upstream are; a string says why it was refused. */
export function parseRecord(raw: string, now = Date.now()): BackupRecord | string {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return 'not JSON';
  }
  if (typeof value !== 'object' || value === null) return 'not an object';
  const { format, digest, fetchedAt, definitions } = value as Record<string, unknown>;
  if (format !== FORMAT) return `unknown format ${JSON.stringify(format)}`;
  if (typeof digest !== 'string' || typeof fetchedAt !== 'number' || !Number.isFinite(fetchedAt)) {
    return 'digest or fetchedAt missing';
  }
  if (fetchedAt > now + FUTURE_TOLERANCE_MS) {
    return `its fetchedAt (${new Date(Math.min(fetchedAt, 8.64e15)).toISOString()}) is in the future`;
  }
  if (fetchedAt < EARLIEST_FETCHED_AT) return 'its fetchedAt is before 2000';
  // the same check as an upstream answer: only what is no definitions document is refused whole
  const checked = checkDocument(definitions);
  if ('refused' in checked) return `malformed definitions (${checked.refused})`;
  if (digestOf(JSON.stringify(definitions)) !== digest) return 'digest does not match the definitions';
  return { digest, fetchedAt, definitions: definitions as ClientFeaturesResponse };
}

/**
 * Reads and writes one backup key. Never queues commands while disconnected (they fail at once),
 * bounds every connect and command, and reconnects in the background with back-off.
 */
export class RedisStore {
  private readonly redis: Redis;
  private pendingWrite: string | undefined;
  private closed = false;

  constructor(private readonly options: RedisStoreOptions) {
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
    const record = parseRecord(raw);
    if (typeof record === 'string') {
      this.options.onFault('invalid', `ignoring the backup in Redis: ${record}`);
      return undefined;
    }
    return record;
  }

  /** Stores definitions; when Redis is away the newest one is kept and written once it is back. */
  write(definitions: ClientFeaturesResponse, fetchedAt: number): BackupRecord {
    const json = JSON.stringify(definitions);
    const digest = digestOf(json);
    const value = `{"format":${FORMAT},"digest":"${digest}","fetchedAt":${fetchedAt},"definitions":${json}}`;
    this.pendingWrite = value;
    if (this.redis.status === 'ready') void this.set(value);
    return { digest, fetchedAt, definitions };
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
