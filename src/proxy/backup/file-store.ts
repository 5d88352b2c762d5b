import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { ClientFeaturesResponse } from 'unleash-client';
import { encodeRecord, parseRecord, type BackupRecord } from './backup-record';
import type { BackupStore, BackupStoreHooks } from './backup-store';

export interface FileStoreOptions extends BackupStoreHooks {
  folder: string;
  /** The file's name in the folder: derived from the backup's scope, never from a secret. */
  fileName: string;
  /** Largest file read (`maxStoredDefinitionsBytes`); its size is checked before it is read. */
  maxBytes: number;
}

/**
 * One backup in a file of `BACKUP_FOLDER` (Unleash Edge's file persistence), in the Redis backup's
 * format and with its checks. Written atomically (a temporary file in the same folder, then a
 * rename), only by this process's owner (mode 0600, the folder 0700 when it is created): the
 * definitions may name users. Writes are one at a time; a newer one waiting replaces an older.
 */
export class FileStore implements BackupStore {
  readonly label = 'backup folder';
  private readonly file: string;
  private pending: string | undefined;
  private writing: Promise<void> | undefined;
  private sequence = 0;
  private closed = false;

  constructor(private readonly options: FileStoreOptions) {
    this.file = path.join(options.folder, options.fileName);
  }

  async read(): Promise<BackupRecord | undefined> {
    const { maxBytes } = this.options;
    let text: string;
    try {
      const { size } = await fs.stat(this.file);
      if (size > maxBytes) {
        this.options.onFault(
          'invalid',
          `ignoring ${this.file}: it is ${size} bytes, above maxStoredDefinitionsBytes (FLAGS_MAX_STORED_DEFINITIONS_BYTES) = ${maxBytes}`,
        );
        return undefined;
      }
      text = await fs.readFile(this.file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') this.options.onFault('read', `${this.file} cannot be read (${code ?? 'error'})`);
      return undefined;
    }
    const record = parseRecord(text);
    if (typeof record === 'string') {
      this.options.onFault('invalid', `ignoring ${this.file}: ${record}`);
      return undefined;
    }
    return record;
  }

  write(definitions: ClientFeaturesResponse, fetchedAt: number): BackupRecord {
    const { value, record } = encodeRecord(definitions, fetchedAt);
    this.pending = value;
    this.writing ??= this.drain();
    return record;
  }

  private async drain(): Promise<void> {
    while (this.pending !== undefined && !this.closed) {
      const value = this.pending;
      this.pending = undefined;
      const temp = `${this.file}.${process.pid}.${++this.sequence}.tmp`;
      try {
        await fs.mkdir(this.options.folder, { recursive: true, mode: 0o700 });
        await fs.writeFile(temp, value, { mode: 0o600 });
        await fs.rename(temp, this.file);
      } catch (err) {
        await fs.rm(temp, { force: true }).catch(() => undefined);
        const code = (err as NodeJS.ErrnoException).code ?? 'error';
        this.options.onFault('write', `${this.file} cannot be written (${code})`);
      }
    }
    this.writing = undefined;
  }

  async close(): Promise<void> {
    // a write under way finishes (the rename keeps the file whole); a waiting one is dropped
    this.closed = true;
    await this.writing;
  }
}
