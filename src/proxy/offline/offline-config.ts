import type { OptionSource } from '../../common/config/resolve';
import type { OfflineConfig } from '../config/types';

/** What offline mode makes of the resolved options. */
export interface OfflineResolution {
  /** Set when the proxy runs offline. */
  readonly offline: OfflineConfig | undefined;
  /** Required options offline mode does without (no upstream, keys from the tokens). */
  readonly notRequired: readonly string[];
  readonly problems: readonly string[];
  /** Warnings for the start-up log: options offline mode does not read, or a file it does not read. */
  readonly warnings: readonly string[];
}

const UPSTREAM_OPTIONS: readonly [string, string][] = [
  ['flagsUrl', 'the upstream URL'],
  ['flagsApiToken', 'the upstream tokens'],
  ['redisUrl', 'the Redis backup'],
  ['backupFolder', 'the backup folder'],
  ['expBootstrap.url', 'a bootstrap URL'],
];

/**
 * Offline mode (Unleash Edge's `offline`): on with the `offline` option (`flags-proxy offline`), or
 * from the environment alone when `bootstrapFile` is given without an upstream URL. The file is
 * then the only source of definitions; `frontendTokens` and `clientTokens` are the keys.
 */
export function resolveOffline(
  get: <T>(key: string) => T,
  sources: ReadonlyMap<string, OptionSource>,
): OfflineResolution {
  const file = get<string | undefined>('bootstrapFile');
  const asked = get<unknown>('offline') === true;
  const hasUpstream = get<string | undefined>('flagsUrl') !== undefined;
  if (!asked && !(file !== undefined && !hasUpstream)) {
    const warnings =
      file !== undefined
        ? [
            `${sources.get('bootstrapFile')?.name ?? 'bootstrapFile'} is read in offline mode only (no upstream URL, or \`flags-proxy offline\`); with an upstream URL it is ignored`,
          ]
        : [];
    return { offline: undefined, notRequired: [], problems: [], warnings };
  }
  const problems: string[] = [];
  if (file === undefined)
    problems.push(
      'Offline mode needs BOOTSTRAP_FILE: the file of flag definitions to serve (the client API\'s {"features": [...]} or Edge\'s {"<name>": {"enabled": true}})',
    );
  const frontendTokens = get<string[] | undefined>('frontendTokens') ?? [];
  const clientTokens = get<string[] | undefined>('clientTokens') ?? [];
  const clientKeys =
    get<string[] | undefined>('clientKeys') ?? get<string[] | undefined>('proxySecrets') ?? [];
  if (frontendTokens.length + clientTokens.length + clientKeys.length === 0)
    problems.push(
      'Offline mode needs keys: FRONTEND_TOKENS (frontend API, /proxy, OFREP) and/or CLIENT_TOKENS (/api/client/features)',
    );
  const shared = new Set([
    ...clientTokens,
    ...(get<string[] | undefined>('expServerSideSdkConfig.tokens') ?? []),
  ]);
  if ([...frontendTokens, ...clientKeys].some((t) => shared.has(t)))
    problems.push(
      'A value of FRONTEND_TOKENS (or clientKeys) is also in CLIENT_TOKENS: frontend keys are public, so that token would let any web page read every flag definition; use different values',
    );
  const ignored = UPSTREAM_OPTIONS.filter(([key]) => sources.has(key)).map(
    ([key, what]) => `${sources.get(key)?.name ?? key} (${what})`,
  );
  const warnings =
    ignored.length > 0
      ? [`Offline mode: ignoring ${ignored.join(', ')}; nothing is fetched from or sent upstream`]
      : [];
  const reloadSeconds = get<number>('reloadInterval');
  return {
    offline:
      file === undefined
        ? undefined
        : { bootstrapFile: file, frontendTokens, clientTokens, reloadIntervalMs: reloadSeconds * 1000 },
    notRequired: ['flagsUrl', 'flagsApiToken', 'clientKeys'],
    problems,
    warnings,
  };
}
