import compression from 'compression';
import type { RequestListener } from 'node:http';
import express, { type Express } from 'express';
import { Registry } from 'prom-client';
import { ErrorAnswers } from '../common/http/error-middleware';
import { asNodeMiddleware } from '../common/http/node-middleware';
import { logEffectiveConfig } from '../common/logging/redact';
import { addressCheck } from './access/address-check';
import { appMetrics } from './assembly/metrics';
import { proxyEndpoints } from './assembly/endpoints';
import { backstageAnswers } from './backstage/backstage-answers';
import type { ClientUsage } from './client-metrics/client-usage';
import { PROXY_OPTIONS } from './config/options';
import { parseConfig } from './config/parse-config';
import type { ProxyConfig, ProxyOptions } from './config/types';
import { CorsHeaderMemo } from './cors/cors-headers';
import { corsMiddleware } from './cors/cors-middleware';
import { KeyScopes } from './environments/key-scopes';
import { ProcessBudget } from './environments/process-budget';
import { EnvironmentRegistry } from './environments/registry';
import { Front } from './http/front';
import { Gate } from './http/gate';
import { keyPolicies } from './http/key-policies';
import type { ChangeStreams } from './ofrep/event-stream';
import { loadEnrichers, loadStrategies } from './plugins/load-plugins';
import { EdgeUpstreamSeries } from './prometheus/edge-series';
import type { ProxyMetrics } from './prometheus/proxy-metrics';
import { RequestMetrics } from './prometheus/request-metrics';
import { upstreamExchanges, watchUpstreamExchanges } from './prometheus/upstream-exchanges';
import { StatusSampler } from './status/status-sampler';
import { TokenValidator } from './token-validation/token-validator';
import { validationClient } from './token-validation/validation-client';
import { registerValidationMetrics } from './token-validation/validation-metrics';
import { upstreamAgent } from './transport/agent';
import type { FeatureRepository } from './upstream/feature-repository';

/** The Express app of a proxy, plus what must be awaited or closed. It never listens by itself. */
export type ProxyApp = Express & {
  /**
   * Resolves once the first synchronisation (or a configured bootstrap or backup) of any upstream
   * token succeeded: when `/proxy/health` turns 200. With several tokens, another environment's keys
   * may still get 503 (`environments.environments[i].features.whenReady()` waits for one).
   */
  whenReady(): Promise<void>;
  /** Stops polling and timers and flushes usage metrics upstream. */
  close(): Promise<void>;
  /**
   * The request listener for a server of its own (`http.createServer(app.listener)`, what `start()`
   * does): the front answers its endpoints without Express's request set-up in front of them, and
   * hands the rest to this app. With context enrichers or `trustProxy` it is the app itself (the
   * endpoints then read Express's request). The app given to a server or mounted as is answers the
   * same through the same front.
   */
  readonly listener: RequestListener;
  readonly proxyConfig: ProxyConfig;
  readonly features: FeatureRepository;
  /** Usage metrics of client SDKs waiting to be forwarded upstream. */
  readonly clientUsage: ClientUsage;
  /** The open OFREP change-notification streams; `close()` ends them. */
  readonly changeStreams: ChangeStreams;
  /** The app's Prometheus registry and what a scrape answers. */
  readonly metrics: ProxyMetrics;
  /** One environment per upstream token; `features`, `clientUsage` and `changeStreams` are the first's. */
  readonly environments: EnvironmentRegistry;
  /** The upstream's word on unconfigured Unleash-format keys; undefined while validation is off. */
  readonly tokenValidator: TokenValidator | undefined;
  /** The app's limits and memory budgets, shared by every environment and project view. */
  readonly budget: ProcessBudget;
};

/** Assembles a proxy: configuration in, Express app out. */
export function createApp(options: ProxyOptions = {}, env: NodeJS.ProcessEnv = process.env): ProxyApp {
  const config = parseConfig(options, env);
  logEffectiveConfig(config.logger, config, PROXY_OPTIONS, [
    'expBootstrap.urlHeaders',
    'offline.frontendTokens',
    'offline.clientTokens',
    'upstreamTls.identity.passphrase',
  ]);
  const strategies = loadStrategies(config.customStrategies);
  const enrichers = loadEnrichers(config.expCustomEnrichers);
  const agent = upstreamAgent(config);
  const httpOptions = { rejectUnauthorized: config.httpOptions.rejectUnauthorized, agent };
  // Series of the environments (backup, change streams) are moved to the app's registry by `appMetrics`.
  const staging = new Registry();
  // Unleash Edge's series; the exchanges are watched before any environment starts fetching.
  const identity = { appName: config.flagsAppName, instanceId: config.flagsInstanceId };
  const edgeUpstream = new EdgeUpstreamSeries(identity, staging);
  const exchanges = upstreamExchanges(config.flagsUrl, agent);
  const stopWatching = exchanges ? watchUpstreamExchanges(exchanges, edgeUpstream) : () => undefined;
  const usageHooks: { metrics?: ProxyMetrics } = {};
  // One budget per app: every environment and project view shares its limits and memory.
  const budget = new ProcessBudget(config, staging);
  const environments = new EnvironmentRegistry({
    config,
    strategies,
    enrichers,
    httpOptions,
    registry: staging,
    budget,
    onClientUsageDrop: (reason) => usageHooks.metrics?.onClientUsageDrop(reason),
    onClientUsageForward: (path, result) => usageHooks.metrics?.onClientUsageForward(path, result),
  });
  const first = environments.first;
  const { metrics, scrapeViews } = appMetrics({
    environments,
    staging,
    edgeUpstream,
    identity,
    budget,
    prometheusCacheInterval: config.prometheusCacheInterval,
  });
  usageHooks.metrics = metrics;

  const validator =
    config.upstreamTokenValidation && environments.named
      ? new TokenValidator({
          validate: validationClient({
            flagsUrl: config.flagsUrl,
            appName: config.flagsAppName,
            instanceId: config.flagsInstanceId,
            httpOptions,
            customHeaders: config.customClientHeaders,
            timeoutMs: config.upstreamRequestTimeout,
          }),
          revalidateIntervalMs: config.tokenRevalidateInterval,
          logger: config.logger,
        })
      : undefined;
  if (validator) registerValidationMetrics(metrics.registry, validator);
  // validated tokens survive a restart: kept (as digests) in each environment's backup
  if (validator) for (const env of environments.environments) env.backup?.keepTokens(validator, env.name);
  let keys: KeyScopes;
  try {
    keys = new KeyScopes({
      registry: environments,
      clientKeys: config.clientKeys,
      clientTokens: [
        ...config.expServerSideSdkConfig.tokens,
        ...config.flagsApiTokens,
        ...(config.offline?.clientTokens ?? []),
      ],
      validator,
      names: { tokens: config.tokensName, keys: config.keysName },
    });
  } catch (err) {
    stopWatching();
    validator?.close();
    void environments.close();
    throw err;
  }

  const sampler = config.disableStatusEndpoint
    ? undefined
    : new StatusSampler(metrics.requestSeries, validator);
  const backstagePath = `${config.proxyBasePath}/internal-backstage`;
  // Enrichers and `trustProxy` read Express's request: Express then stays in front of the front.
  const expressInFront = enrichers.length > 0 || config.trustProxy !== false;
  const cors = corsMiddleware(config.cors);
  const gate = new Gate({
    allowed: addressCheck(config.access),
    ready: environments,
    cors: asNodeMiddleware(cors),
    corsHeaders: new CorsHeaderMemo(cors),
    requestMetrics: new RequestMetrics(metrics.requestSeries),
    maxBodySize: config.maxBodySize,
    bodyResponse: [asNodeMiddleware(compression({ threshold: 1024 }))],
    errors: new ErrorAnswers(config.logger),
  });
  const front = new Front(
    gate,
    proxyEndpoints({
      config,
      first,
      keys,
      policies: keyPolicies(
        keys,
        config.clientKeysHeaderName,
        config.expServerSideSdkConfig.tokens,
        first.all,
      ),
      metrics,
      scrapeViews,
      budget,
      backstage: backstageAnswers({
        config,
        environments,
        metrics,
        validator,
        status: sampler && { sampler, budget, backstagePath },
      }),
      memoSound: !expressInFront,
    }),
  );

  // Express is the shell users mount and configure (`trust proxy`); the front answers every request.
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  app.use(front.middleware);
  const listener: RequestListener = expressInFront ? app : front.listener(app);

  return Object.assign(app, {
    whenReady: () => environments.whenReady(),
    listener,
    close: async () => {
      stopWatching();
      sampler?.close();
      validator?.close();
      await environments.close();
      metrics.close();
    },
    proxyConfig: config,
    features: first.features,
    clientUsage: first.clientUsage,
    changeStreams: first.changeStreams,
    metrics,
    environments,
    tokenValidator: validator,
    budget,
  });
}
