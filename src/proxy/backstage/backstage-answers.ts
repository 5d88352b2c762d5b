import type { Response } from 'express';
import type { EnvironmentRegistry } from '../environments/registry';
import type { ProxyMetrics } from '../prometheus/proxy-metrics';
import { scrapeAnswer } from '../prometheus/scrape-answer';
import type { ProxyConfig } from '../config/types';
import type { TokenValidator } from '../token-validation/token-validator';
import type { ProcessBudget } from '../environments/process-budget';
import type { ScopeServing } from '../environments/environment';
import type { StatusSampler } from '../status/status-sampler';
import { statusAnswers } from '../status/status-answers';
import type { ExpressServe } from '../http/endpoint';
import { knownTokenSources, knownTokens } from './known-tokens';
import { metricsBatch } from './metrics-batch';

/** Unleash Edge's `DISABLE_*_ENDPOINT` switches; `health` and `ready` are always served. */
export interface BackstageSwitches {
  disableMetricsEndpoint: boolean;
  disableMetricsBatchEndpoint: boolean;
  disableTokensEndpoint: boolean;
  disableFeaturesEndpoint: boolean;
  disableStatusEndpoint: boolean;
}

export interface BackstageOptions {
  config: Pick<
    ProxyConfig,
    | 'flagsApiTokens'
    | 'clientKeys'
    | 'expServerSideSdkConfig'
    | 'contract'
    | 'workers'
    | 'proxyBasePath'
    | 'refreshInterval'
  > &
    BackstageSwitches;
  environments: EnvironmentRegistry;
  metrics: ProxyMetrics;
  validator: TokenValidator | undefined;
  /** The status page's samples; undefined with `DISABLE_STATUS_ENDPOINT`. */
  status?: { sampler: StatusSampler; budget: ProcessBudget; backstagePath: string };
}

/** One answer of the backstage, at its path under `{base}/internal-backstage`. */
export interface BackstageAnswer {
  readonly path: string;
  readonly serve: ExpressServe;
  /** Served to a client (backend) token only (`features`): a frontend key is a 403. */
  readonly backendToken?: true;
}

/** Edge's body of a ready check that fails (`EdgeError::NotReady`). */
const NOT_READY_BODY = JSON.stringify({
  error: 'flags-proxy is not ready to serve requests: no flag definitions are held yet',
  status: 'NOT_READY',
});

/**
 * Unleash Edge's internal backstage, under `{base}/internal-backstage`, without a key except
 * `features`: `health` (200 whenever the process serves), `ready` (503 until any environment holds
 * definitions), `metrics` (the Prometheus exposition, unfiltered), `tokens`, `metricsbatch`,
 * `features`, and the status page. A switched-off endpoint is not routed (404), as in Edge.
 */
export function backstageAnswers(opts: BackstageOptions): BackstageAnswer[] {
  const answers: BackstageAnswer[] = [];
  const get = (path: string, serve: ExpressServe, backendToken?: true): void => {
    answers.push({ path, serve, backendToken });
  };
  const { environments, config: switches } = opts;
  const tokens = knownTokenSources(opts.config, opts.validator);
  get('/health', (_req, res) => {
    res.status(200).json({ status: 'OK' });
  });
  get('/ready', (_req, res) => {
    if (environments.isReady()) {
      res.status(200).json({ status: 'READY' });
      return;
    }
    res
      .status(503)
      .type('application/json; charset=utf-8')
      .setHeader('Retry-After', '1')
      .send(NOT_READY_BODY);
  });
  if (!switches.disableMetricsEndpoint) get('/metrics', scrapeAnswer(opts.metrics));
  if (!switches.disableTokensEndpoint) {
    get('/tokens', (_req, res) => {
      res.status(200).json(knownTokens({ environments, ...tokens }));
    });
  }
  if (!switches.disableMetricsBatchEndpoint) {
    get('/metricsbatch', (_req, res) => {
      res.status(200).json(metricsBatch(environments.environments.map((e) => e.clientUsage)));
    });
  }
  if (opts.status && !switches.disableStatusEndpoint) {
    const { sampler, budget, backstagePath } = opts.status;
    const tokenInfo = switches.disableTokensEndpoint
      ? undefined
      : () => knownTokens({ environments, ...tokens });
    for (const answer of statusAnswers(
      { config: opts.config, environments, budget, sampler, tokens: tokenInfo },
      backstagePath,
    ))
      get(answer.path, answer.serve);
  }
  if (!switches.disableFeaturesEndpoint) {
    const features = (_req: unknown, res: Response, call: { scope: ScopeServing }): void => {
      const serving = call.scope;
      res.setHeader('Cache-Control', 'no-store');
      res.status(200).json({ [serving.environment.name]: serving.features.clientFeatures() });
    };
    get('/features', features, true);
  }
  return answers;
}
