import { createHash } from 'node:crypto';
import type { ProxyConfig } from '../config/types';
import type { BackupScope } from './backup-scope';
import { DefinitionsBackup } from './definitions-backup';
import { FileStore } from './file-store';
import { RedisStore } from './redis-store';

/** Bound of every Redis connect and command. */
const REDIS_TIMEOUT_MS = 2_000;

/**
 * The Redis key of the backup: the prefix, then a digest of what decides which definitions the
 * upstream sends (URL, project, name prefix, tags, and the upstream token's environment and
 * projects when it is in Unleash's format: `backup-scope.ts`), so proxies of different upstreams or
 * environments sharing one Redis never read each other's definitions. The API token itself is not
 * part of it (a digest of a weak token could be guessed): proxies with tokens in another format of
 * different environments need different prefixes.
 */
export function backupKey(config: ProxyConfig, scope?: BackupScope): string {
  const parts: unknown[] = [config.flagsUrl, config.projectName, config.namePrefix, config.tags];
  if (scope) parts.push(scope.environment, scope.projects);
  const digest = createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 16);
  return `${config.redisKeyPrefix}definitions:${digest}`;
}

/**
 * The backup file's name in `BACKUP_FOLDER`: a digest of what names the Redis key (`backupKey`),
 * so each upstream token's environment and projects has its own file, and no name carries a secret.
 */
export function backupFileName(config: ProxyConfig, scope?: BackupScope): string {
  const digest = createHash('sha256').update(backupKey(config, scope)).digest('hex').slice(0, 24);
  return `flags-proxy-definitions-${digest}.json`;
}

/**
 * The shared backup when `redisUrl` is configured; else the backup folder when `backupFolder` is
 * (checked at start: `checkBackupFolder`). `scope` names the key and file; `recordScope` is what
 * their records hold.
 */
export function createBackup(
  config: ProxyConfig,
  scope: BackupScope | undefined,
  recordScope: BackupScope,
): DefinitionsBackup | undefined {
  const url = config.redisUrl;
  const folder = config.backupFolder;
  if (url === undefined && folder !== undefined) {
    return new DefinitionsBackup(
      (hooks) =>
        new FileStore({
          folder,
          fileName: backupFileName(config, scope),
          scope: recordScope,
          maxBytes: config.maxStoredDefinitionsBytes,
          ...hooks,
        }),
      config.logger,
    );
  }
  if (url === undefined) return undefined;
  return new DefinitionsBackup(
    (hooks) =>
      new RedisStore({
        url,
        key: backupKey(config, scope),
        scope: recordScope,
        timeoutMs: REDIS_TIMEOUT_MS,
        maxBytes: config.maxStoredDefinitionsBytes,
        ...hooks,
      }),
    config.logger,
  );
}
