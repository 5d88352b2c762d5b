import cluster from 'node:cluster';
import { packageVersion } from '../../common/files/package-version';
import type { TokenInfo, ListedToken } from '../backstage/known-tokens';
import type { ProcessBudget } from '../environments/process-budget';
import type { ProxyConfig } from '../config/types';
import type { Environment } from '../environments/environment';
import type { EnvironmentRegistry } from '../environments/registry';
import type { RequestTotal, StatusPlots, StatusSampler } from './status-sampler';

/** Tokens listed per environment at most; the rest are counted. */
const MAX_TOKENS_LISTED = 50;

export interface StatusSources {
  config: Pick<ProxyConfig, 'contract' | 'workers' | 'proxyBasePath' | 'refreshInterval'>;
  environments: EnvironmentRegistry;
  budget: ProcessBudget;
  sampler: StatusSampler;
  /** What `/internal-backstage/tokens` shows (anonymised); undefined when that endpoint is off. */
  tokens: (() => TokenInfo) | undefined;
}

interface Budgeted {
  used: number;
  limit: number;
}

export interface EnvironmentStatus {
  name: string;
  ready: boolean;
  /** Epoch ms it first held definitions (null: not yet). */
  readySince: number | null;
  revision: number;
  definitions: number;
  /** Epoch ms the definitions last changed, and of the last fetch (changed or not); null: never. */
  lastUpdate: number | null;
  lastFetch: number | null;
  /** `ok`, `failing` (the upstream is lost, since `failingSince`), `refused` (the token), `waiting`, `offline`. */
  fetch: 'ok' | 'failing' | 'refused' | 'waiting' | 'offline';
  failingSince: number | null;
  fetchErrors: number;
  definitionsRefused: number;
  usageReportsRefused: number;
  quarantined: number;
  changeStreams: number;
  /** Anonymised as `/internal-backstage/tokens` shows them; null when that endpoint is off. */
  tokens: ListedToken[] | null;
  moreTokens: number;
}

export interface StatusReport {
  generatedAt: number;
  process: {
    version: string;
    contract: string;
    basePath: string;
    startedAt: number;
    uptimeSeconds: number;
    workers: number;
    /** This worker's id in a cluster (every number below is this worker's); null in a single process. */
    worker: number | null;
    ready: boolean;
    memory: {
      rss: number;
      heapUsed: number;
      heapTotal: number;
      external: number;
      answerCache: Budgeted & { entries: number; maxEntries: number };
      memo: Budgeted;
      projectViews: Budgeted;
      changeStreams: Budgeted;
    };
  };
  environments: EnvironmentStatus[];
  requests: RequestTotal[];
  plots: StatusPlots;
}

const orNull = (ms: number) => (ms > 0 ? ms : null);

function fetchState(env: Environment, offline: boolean): EnvironmentStatus['fetch'] {
  if (offline) return 'offline';
  if (env.refused) return 'refused';
  if (env.features.health.lost) return 'failing';
  return env.features.stats.lastFetch > 0 ? 'ok' : 'waiting';
}

function tokensOf(info: TokenInfo | undefined, env: Environment, index: number): ListedToken[] | null {
  if (info === undefined) return null;
  const own = info.tokenRefreshes[index]?.token;
  const served = info.tokenValidationStatus.filter(
    (t) => t.environment === env.name || (t.environment === null && index === 0),
  );
  return own ? [own, ...served] : served;
}

/** Everything the status page shows, read from what the process already counts. */
export function statusReport(sources: StatusSources, startedAt: number): StatusReport {
  const { config, environments, budget, sampler } = sources;
  const now = Date.now();
  const memory = process.memoryUsage();
  const evaluation = budget.evaluation;
  const info = sources.tokens?.();
  return {
    generatedAt: now,
    process: {
      version: packageVersion(),
      contract: config.contract === 'edge' ? "Unleash Edge's" : "the specification's",
      basePath: config.proxyBasePath,
      startedAt,
      uptimeSeconds: Math.round((now - startedAt) / 1000),
      workers: config.workers,
      worker: cluster.isWorker ? (cluster.worker?.id ?? null) : null,
      ready: environments.isReady(),
      memory: {
        rss: memory.rss,
        heapUsed: memory.heapUsed,
        heapTotal: memory.heapTotal,
        external: memory.external,
        answerCache: {
          used: evaluation.answers.budget.bytes,
          limit: evaluation.answers.budget.maxBytes,
          entries: evaluation.answers.budget.size,
          maxEntries: evaluation.answers.budget.maxItems,
        },
        memo: { used: evaluation.memo.bytes, limit: evaluation.memo.maxBytes },
        projectViews: { used: budget.views.size, limit: budget.views.maxViews },
        changeStreams: { used: budget.streams.size, limit: budget.streams.limit },
      },
    },
    environments: environments.environments.map((env, index): EnvironmentStatus => {
      const tokens = tokensOf(info, env, index);
      const { stats } = env.features;
      return {
        name: env.name,
        ready: env.isServing(),
        readySince: orNull(env.readyAt),
        revision: env.features.revision,
        definitions: env.features.isReady() ? env.features.toggles().length : 0,
        lastUpdate: orNull(stats.lastUpdate),
        lastFetch: orNull(stats.lastFetch),
        fetch: fetchState(env, environments.offline),
        failingSince: orNull(env.features.health.lostSince),
        fetchErrors: stats.fetchErrors,
        definitionsRefused: stats.definitionsRefused,
        usageReportsRefused: stats.usageReportsRefused,
        quarantined: stats.togglesQuarantined,
        changeStreams: env.changeStreams.size,
        tokens: tokens === null ? null : tokens.slice(0, MAX_TOKENS_LISTED),
        moreTokens: tokens === null ? 0 : Math.max(0, tokens.length - MAX_TOKENS_LISTED),
      };
    }),
    requests: sampler.totals(),
    plots: sampler.plots(),
  };
}
