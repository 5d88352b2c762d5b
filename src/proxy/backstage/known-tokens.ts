import type { ProxyConfig } from '../config/types';
import type { EnvironmentRegistry } from '../environments/registry';
import type { TokenValidator } from '../token-validation/token-validator';
import { parseUnleashToken } from '../token-validation/unleash-token';
import { anonymiseToken } from './anonymise';

/** A token as Unleash Edge lists it (`EdgeToken`), its secret anonymised. */
export interface ListedToken {
  token: string;
  /** `frontend` or `client` (Unleash's word; Edge writes `backend`, and reads both). */
  type: 'frontend' | 'client';
  environment: string | null;
  projects: readonly string[];
  /** `Trusted`: configured here; `Validated`: confirmed by the upstream. */
  status: 'Trusted' | 'Validated';
}

/** An upstream token and its synchronisation, as Edge's `TokenRefresh` (snake_case, as Edge writes it). */
export interface TokenRefresh {
  token: ListedToken;
  etag: null;
  next_refresh: null;
  last_refreshed: string | null;
  last_feature_count: number | null;
  last_check: string | null;
  revision_id: null;
  /** Failed or refused fetches since start. */
  failure_count: number;
}

/** `GET /internal-backstage/tokens`: Edge's `TokenInfo`. */
export interface TokenInfo {
  tokenRefreshes: TokenRefresh[];
  tokenValidationStatus: ListedToken[];
  invalidTokenCount: number;
}

export interface KnownTokensSource {
  environments: EnvironmentRegistry;
  validator: TokenValidator | undefined;
  /** The upstream tokens, in the order of `environments.environments`. */
  upstreamTokens: readonly string[];
  /** Configured client keys (frontend). */
  clientKeys: readonly string[];
  /** Configured server-side SDK tokens (client). */
  serverTokens: readonly string[];
}

/** The sources of `knownTokens` in a proxy's configuration. */
export function knownTokenSources(
  config: Pick<ProxyConfig, 'flagsApiTokens' | 'clientKeys' | 'expServerSideSdkConfig'>,
  validator: TokenValidator | undefined,
): Omit<KnownTokensSource, 'environments'> {
  return {
    upstreamTokens: config.flagsApiTokens,
    clientKeys: config.clientKeys,
    serverTokens: config.expServerSideSdkConfig.tokens,
    validator,
  };
}

const isoOrNull = (ms: number): string | null => (ms > 0 ? new Date(ms).toISOString() : null);

/** A configured key's environment and projects, as the key step resolves it (see `KeyScopes`). */
function configured(registry: EnvironmentRegistry, entry: string, type: ListedToken['type']): ListedToken {
  const parsed = parseUnleashToken(entry);
  if (parsed) {
    return {
      token: anonymiseToken(entry),
      type,
      environment: parsed.environment,
      projects: parsed.projects,
      status: 'Trusted',
    };
  }
  const at = entry.lastIndexOf('@');
  const named = at > 0 ? registry.byName(entry.slice(at + 1)) : undefined;
  const environment = named ?? registry.first;
  return { token: '****', type, environment: environment.name, projects: ['*'], status: 'Trusted' };
}

/**
 * What this instance knows of tokens: its upstream tokens (with their synchronisation), the keys
 * and tokens configured here (`Trusted`) and those the upstream confirmed (`Validated`); never a
 * whole secret.
 */
export function knownTokens(source: KnownTokensSource): TokenInfo {
  const { environments, validator } = source;
  const tokenRefreshes = environments.environments.map((env, i): TokenRefresh => {
    const token = source.upstreamTokens[i] ?? '';
    return {
      token: {
        token: anonymiseToken(token),
        type: 'client',
        environment: env.named ? env.name : null,
        projects: env.projects,
        status: env.isServing() ? 'Validated' : 'Trusted',
      },
      etag: null,
      next_refresh: null,
      last_refreshed: isoOrNull(env.features.stats.lastUpdate),
      last_feature_count: env.features.isReady() ? env.features.toggles().length : null,
      last_check: isoOrNull(env.features.stats.lastFetch),
      revision_id: null,
      failure_count: env.features.stats.fetchErrors,
    };
  });
  // only the types the key step serves (`backend` is Unleash 8's and Edge's word for `client`)
  const listedType = (type: string): ListedToken['type'] | undefined =>
    type === 'frontend' ? 'frontend' : type === 'client' || type === 'backend' ? 'client' : undefined;
  const validated = (validator?.acceptedTokens() ?? []).flatMap((t): ListedToken[] => {
    const type = listedType(t.type);
    if (type === undefined) return [];
    return [
      {
        token: anonymiseToken(t.token),
        type,
        environment: t.environment ?? null,
        projects: t.projects,
        status: 'Validated',
      },
    ];
  });
  return {
    tokenRefreshes,
    tokenValidationStatus: [
      ...source.clientKeys.map((k) => configured(environments, k, 'frontend')),
      ...source.serverTokens.map((t) => configured(environments, t, 'client')),
      ...validated,
    ],
    invalidTokenCount: validator?.refusedCount ?? 0,
  };
}
