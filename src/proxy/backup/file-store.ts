import { randomBytes } from 'node:crypto';
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';
import type { ClientFeaturesResponse } from 'unleash-client';
import { readChecked } from '../../common/files/checked-read';
import { encodeRecord, type BackupRecord, type RecordScope } from './backup-record';
import type { BackupStore, BackupStoreHooks } from './backup-store';
import { RecordChecker } from './record-checker';
import type { StoredToken } from './stored-tokens';

export interface FileStoreOptions extends BackupStoreHooks {
  /** Checked at start (`backup-folder.ts`): a directory only its owner (this user or root) writes. */
  folder: string;
  /** The file's name in the folder: derived from the backup's scope, never from a secret. */
  fileName: string;
  /** Whose definitions this file holds; a record of another scope is never served. */
  scope: RecordScope;
  /** Largest file read (`maxStoredDefinitionsBytes`); its size is checked on its handle before it is read. */
  maxBytes: number;
}

/** Longest a shutdown waits for a write under way. */
const CLOSE_WAIT_MS = 2_000;

const LIMIT_NAME = 'maxStoredDefinitionsBytes (FLAGS_MAX_STORED_DEFINITIONS_BYTES)';

/** A new file only: never one that exists, never through a link. */
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0);

/**
 * One backup in a file of `BACKUP_FOLDER` (Unleash Edge's file persistence), in the Redis backup's
 * format and with its checks. Written atomically: a temporary file of an unpredictable name (random
 * bytes) created exclusively without following links (mode 0600: the definitions may name users),
 * then renamed over the file, which replaces a link planted there instead of writing through it.
 * Read through one handle that refuses a link, a FIFO or a device. Writes are one at a time; a
 * newer one waiting replaces an older.
 */
export class FileStore implements BackupStore {
  readonly label = 'backup folder';
  private readonly file: string;
  private readonly checker: RecordChecker;
  private pending: string | undefined;
  private writing: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: FileStoreOptions) {
    this.file = path.join(options.folder, options.fileName);
    this.checker = new RecordChecker(options.scope, options);
  }

  async read(): Promise<BackupRecord | undefined> {
    const read = await readChecked(this.file, {
      maxBytes: this.options.maxBytes,
      limitName: LIMIT_NAME,
      noFollow: true,
    });
    if ('refused' in read) {
      if (read.code === 'ENOENT') return undefined;
      if (read.code !== undefined && read.stats === undefined && !read.refused.includes('symbolic link'))
        this.options.onFault('read', `${this.file} ${read.refused.replace(/^it /, '')}`);
      else this.options.onFault('invalid', `ignoring ${this.file}: ${read.refused}`);
      return undefined;
    }
    return this.checker.check(read.bytes.toString('utf8'), this.file);
  }

  write(definitions: ClientFeaturesResponse, fetchedAt: number, tokens?: StoredToken[]): BackupRecord {
    const { value, record } = encodeRecord(definitions, fetchedAt, this.options.scope, tokens);
    this.pending = value;
    this.writing ??= this.drain();
    return record;
  }

  private async drain(): Promise<void> {
    while (this.pending !== undefined && !this.closed) {
      const value = this.pending;
      this.pending = undefined;
      const temp = `${this.file}.${randomBytes(12).toString('hex')}.tmp`;
      let created = false;
      try {
        const handle = await fs.open(temp, CREATE_FLAGS, 0o600);
        created = true;
        try {
          await handle.writeFile(value);
        } finally {
          await handle.close();
        }
        await fs.rename(temp, this.file);
        created = false;
      } catch (err) {
        if (created) await fs.rm(temp, { force: true }).catch(() => undefined);
        const code = (err as NodeJS.ErrnoException).code ?? 'error';
        this.options.onFault('write', `${this.file} cannot be written (${code})`);
      }
    }
    this.writing = undefined;
  }

  async close(): Promise<void> {
    // a write under way finishes (the rename keeps the file whole); a waiting one is dropped; a
    // write that hangs (a stalled volume) never holds the shutdown past CLOSE_WAIT_MS
    this.closed = true;
    if (this.writing === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.writing,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS).unref())),
    ]);
    clearTimeout(timer);
  }
}
