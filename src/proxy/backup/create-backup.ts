import { createHash } from 'node:crypto';
import type { ProxyConfig } from '../config/types';
import { DefinitionsBackup } from './definitions-backup';
import { RedisStore } from './redis-store';

/** Bound of every Redis connect and command. */
const REDIS_TIMEOUT_MS = 2_000;

/**
 * The Redis key of the backup: the prefix, then a digest of what decides which definitions the
 * upstream sends (URL, project, name prefix, tags), so proxies of different upstreams sharing one
 * Redis never read each other's definitions. The API token is not part of it (a digest of a weak
 * token could be guessed): proxies with tokens of different environments need different prefixes.
 */
export function backupKey(config: ProxyConfig): string {
  const scope = JSON.stringify([config.flagsUrl, config.projectName, config.namePrefix, config.tags]);
  return `${config.redisKeyPrefix}definitions:${createHash('sha256').update(scope).digest('hex').slice(0, 16)}`;
}

/** The shared backup when `redisUrl` is configured. */
export function createBackup(config: ProxyConfig): DefinitionsBackup | undefined {
  const url = config.redisUrl;
  if (url === undefined) return undefined;
  return new DefinitionsBackup(
    (hooks) =>
      new RedisStore({
        url,
        key: backupKey(config),
        timeoutMs: REDIS_TIMEOUT_MS,
        maxBytes: config.maxStoredDefinitionsBytes,
        ...hooks,
      }),
    config.logger,
  );
}
