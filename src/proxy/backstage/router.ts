import { Router, type RequestHandler } from 'express';
import { AuthenticationRequired, NoAccessError } from '../../common/errors/http-errors';
import { keyFromHeader } from '../auth/client-key';
import type { KeyScopes } from '../environments/key-scopes';
import type { EnvironmentRegistry } from '../environments/registry';
import { environmentRefused, resolveRequestKey, scopeOf } from '../environments/require-scope';
import type { ProxyMetrics } from '../prometheus/proxy-metrics';
import { clientGone, retryAfter, ValidationUnavailable } from '../token-validation/validation-unavailable';
import type { ProxyConfig } from '../config/types';
import type { TokenValidator } from '../token-validation/token-validator';
import type { ProcessBudget } from '../environments/process-budget';
import type { StatusSampler } from '../status/status-sampler';
import { statusRouter } from '../status/status-router';
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
  keys: KeyScopes;
  validator: TokenValidator | undefined;
  /** The status page's samples; undefined with `DISABLE_STATUS_ENDPOINT`. */
  status?: { sampler: StatusSampler; budget: ProcessBudget; backstagePath: string };
}

/** Edge's body of a ready check that fails (`EdgeError::NotReady`). */
const NOT_READY_BODY = JSON.stringify({
  error: 'flags-proxy is not ready to serve requests: no flag definitions are held yet',
  status: 'NOT_READY',
});

/**
 * `/features` is served to a client (backend) token only, and shows what that token may read: a
 * missing or unknown token is a 401, a frontend key a 403, a token whose environment is not served
 * now a 503.
 */
function clientTokenOnly(keys: KeyScopes): RequestHandler {
  const attempts = [{ header: 'authorization', kind: 'client' as const }];
  const missing = new AuthenticationRequired('Missing client token: send it in the "authorization" header');
  const invalid = new AuthenticationRequired('Invalid client token in the "authorization" header');
  const frontendKey = new NoAccessError(
    '/internal-backstage/features shows flag definitions: it needs a client (backend) token, not a frontend key',
  );
  return async (req, res, next) => {
    const serving = await resolveRequestKey({ keys, attempts, missing, invalid }, req.headers, () =>
      clientGone(res),
    );
    if (serving instanceof ValidationUnavailable) return next(retryAfter(res, serving));
    if (serving instanceof AuthenticationRequired) {
      const key = keyFromHeader(req.headers.authorization);
      return next(key !== undefined && keys.known(key, 'frontend') ? frontendKey : serving);
    }
    const refused = environmentRefused(serving);
    if (refused) {
      res.setHeader('Retry-After', '1');
      return next(refused);
    }
    res.locals.scope = serving;
    next();
  };
}

/**
 * Unleash Edge's internal backstage, mounted at `{base}/internal-backstage`, without a key except
 * `features`: `health` (200 whenever the process serves), `ready` (503 until any environment holds
 * definitions), `metrics` (the Prometheus exposition, unfiltered), `tokens`, `metricsbatch`,
 * `features`. A switched-off endpoint is not routed (404), as in Edge.
 */
export function backstageRouter(opts: BackstageOptions): Router {
  const router = Router();
  const { environments, config: switches } = opts;
  const tokens = knownTokenSources(opts.config, opts.validator);
  router.get('/health', (_req, res) => {
    res.status(200).json({ status: 'OK' });
  });
  router.get('/ready', (_req, res) => {
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
  if (!switches.disableMetricsEndpoint) {
    router.get('/metrics', async (_req, res) => {
      const text = await opts.metrics.scrape();
      res.status(200).type(opts.metrics.registry.contentType).send(text);
    });
  }
  if (!switches.disableTokensEndpoint) {
    router.get('/tokens', (_req, res) => {
      res.status(200).json(knownTokens({ environments, ...tokens }));
    });
  }
  if (!switches.disableMetricsBatchEndpoint) {
    router.get('/metricsbatch', (_req, res) => {
      res.status(200).json(metricsBatch(environments.environments.map((e) => e.clientUsage)));
    });
  }
  if (opts.status && !switches.disableStatusEndpoint) {
    const { sampler, budget, backstagePath } = opts.status;
    const tokenInfo = switches.disableTokensEndpoint
      ? undefined
      : () => knownTokens({ environments, ...tokens });
    router.use(
      statusRouter({ config: opts.config, environments, budget, sampler, tokens: tokenInfo }, backstagePath),
    );
  }
  if (!switches.disableFeaturesEndpoint) {
    router.get('/features', clientTokenOnly(opts.keys), (_req, res) => {
      const serving = scopeOf(res);
      res.setHeader('Cache-Control', 'no-store');
      res.status(200).json({ [serving.environment.name]: serving.features.clientFeatures() });
    });
  }
  return router;
}
