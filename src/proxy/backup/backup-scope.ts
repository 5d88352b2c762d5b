import { scryptSync } from 'node:crypto';
import type { ClientFeaturesResponse } from 'unleash-client';
import type { StorageProvider } from '../upstream/sdk/types';
import type { ProxyConfig } from '../config/types';
import type { UpstreamToken } from '../environments/upstream-tokens';

/** Which definitions a backup holds, beyond the upstream's URL and filters: an upstream token's. */
export interface BackupScope {
  readonly environment: string;
  /** The token's projects, comma-separated; for a `[]:` token, a slow digest of the token. */
  readonly projects: string;
}

/** Where one upstream token's definitions are backed up: the Redis key's parts and the storage provider. */
export interface BackupPlace {
  /** Part of the Redis key's digest; undefined keeps the key a proxy of one such token always had. */
  readonly scope: BackupScope | undefined;
  /** What its records say they hold, and what a record must say to be read: the token's environment and projects. */
  readonly recordScope: BackupScope;
  readonly redisKeyPrefix: string;
  readonly storageProvider: StorageProvider<ClientFeaturesResponse> | undefined;
}

/**
 * An upstream token's own backup, so that no environment (or project set) ever starts from
 * another's definitions, in Redis or in a configured `storageProvider`:
 * - a token in Unleash's format: keyed by its environment and projects (whichever proxy, however
 *   many tokens it holds; the same environment and projects share one backup, as their
 *   definitions are the same). A `[]:` token names its projects only to the upstream: its backup is
 *   keyed by a slow digest of the token itself (never the token).
 * - a token in another format names no environment: alone in a proxy it keeps the key it always
 *   had (proxies with such tokens of different environments need different prefixes); beside other
 *   tokens it is told apart by its position, as before.
 */
export function backupPlace(
  config: ProxyConfig,
  upstream: UpstreamToken,
  position: { index: number; several: boolean },
): BackupPlace {
  // (without any backup configured, the `[]:` token's slow digest is not worth computing)
  const backedUp =
    config.redisUrl !== undefined ||
    config.backupFolder !== undefined ||
    config.storageProvider !== undefined;
  const scope = upstream.named && backedUp ? scopeOf(upstream) : undefined;
  const positional = !upstream.named && position.several;
  const suffix = scope
    ? `:${scope.environment}:${scope.projects}`
    : positional
      ? `:${upstream.environment}:${position.index}`
      : '';
  return {
    scope,
    recordScope: scope ?? { environment: upstream.environment, projects: upstream.projects.join(',') },
    redisKeyPrefix: positional
      ? `${config.redisKeyPrefix}${upstream.environment}:${position.index}:`
      : config.redisKeyPrefix,
    storageProvider:
      config.storageProvider && suffix !== ''
        ? suffixedStorage(config.storageProvider, suffix)
        : config.storageProvider,
  };
}

/** Cost parameters of the `[]:` token's digest: slow enough that a weak secret cannot be searched for. */
const SCRYPT = { N: 16384, r: 8, p: 1 };

function scopeOf(upstream: UpstreamToken): BackupScope {
  if (upstream.projects.length > 0)
    return { environment: upstream.environment, projects: upstream.projects.join(',') };
  const digest = scryptSync(upstream.token, 'flags-proxy definitions backup', 16, SCRYPT).toString('hex');
  return { environment: upstream.environment, projects: `[]${digest}` };
}

/** The user's storage provider with each key (the SDK's app name) suffixed by the token's scope. */
function suffixedStorage(
  inner: StorageProvider<ClientFeaturesResponse>,
  suffix: string,
): StorageProvider<ClientFeaturesResponse> {
  return {
    set: (key, data) => inner.set(`${key}${suffix}`, data),
    get: (key) => inner.get(`${key}${suffix}`),
  };
}
