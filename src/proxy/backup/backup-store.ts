import type { ClientFeaturesResponse } from 'unleash-client';
import type { BackupFault, BackupRecord } from './backup-record';
import type { StoredToken } from './stored-tokens';

/** Hooks a store reports through: faults (counted and logged) and a (re-)established connection. */
export interface BackupStoreHooks {
  onFault(kind: BackupFault, message: string): void;
  /** Something stored that is not served, said once by the store (a record of another scope): counted as `invalid`. */
  onIgnored(message: string): void;
  onReady(): void;
}

/** Where one backup of definitions is kept: a Redis key or a file of `BACKUP_FOLDER`. */
export interface BackupStore {
  /** How log lines name it: `Redis backup`, `backup folder`. */
  readonly label: string;
  /** The stored record; undefined when there is none, it cannot be reached, or it is refused (a fault). */
  read(): Promise<BackupRecord | undefined>;
  /** Stores definitions accepted at `fetchedAt`, and validated tokens; never throws (a failure is a fault). */
  write(definitions: ClientFeaturesResponse, fetchedAt: number, tokens?: StoredToken[]): BackupRecord;
  close(): Promise<void>;
}
