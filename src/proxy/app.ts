import compression from 'compression';
import type { RequestListener } from 'node:http';
import express, { type Express, type RequestHandler, type Response } from 'express';
import { ErrorAnswers, errorMiddleware, notFoundHandler } from '../common/http/error-middleware';
import { asNodeMiddleware } from '../common/http/node-middleware';
import { logEffectiveConfig } from '../common/logging/redact';
import { accessMiddleware, addressCheck } from './access/access-middleware';
import { ProcessBudget } from './environments/process-budget';
import { PROXY_OPTIONS } from './config/options';
import { parseConfig } from './config/parse-config';
import type { ProxyConfig, ProxyOptions } from './config/types';
import { Registry } from 'prom-client';
import { usageOfAll, type ClientUsage } from './client-metrics/client-usage';
import { clientMetricsRouter } from './client-metrics/router';
import { CorsHeaderMemo } from './cors/cors-headers';
import { frontendFeatureEndpoint } from './http/endpoints/frontend-feature';
import { ofrepBulkEndpoint, ofrepSingleEndpoint } from './http/endpoints/ofrep-evaluate';
import { proxyListEndpoint } from './http/endpoints/proxy-list';
import { Front } from './http/front';
import { Gate } from './http/gate';
import { frontendKey, keyStepOptions, ofrepKey, resolveOfrepKey } from './http/key-policies';
import { RequestBody } from './http/request-body';
import { corsMiddleware } from './cors/cors-middleware';
import { docsRouter } from './docs/router';
import { environmentLabels, registerEnvironmentMetrics } from './environments/environment-metrics';
import { registerEngineMetrics } from './environments/engine-metrics';
import { KeyScopes } from './environments/key-scopes';
import { EnvironmentRegistry } from './environments/registry';
import type { Environment } from './environments/environment';
import { environmentRefused, requireScope, scopeOf } from './environments/require-scope';
import { healthRouter } from './health/router';
import { backstageRouter } from './backstage/router';
import { StatusSampler } from './status/status-sampler';
import { bulkMetricsRouter } from './edge-api/bulk-metrics';
import { AddressBudget } from './edge-api/address-budget';
import { edgeValidateRouter } from './edge-api/validate-router';
import type { ChangeStreams } from './ofrep/event-stream';
import { ofrepRoutes } from './ofrep/router';
import { ofrepScopeOf } from './ofrep/bulk-answer';
import { loadEnrichers, loadStrategies } from './plugins/load-plugins';
import { ProxyMetrics } from './prometheus/proxy-metrics';
import { RequestMetrics } from './prometheus/request-metrics';
import { environmentScrape } from './prometheus/environment-filter';
import { registerEdgeRequestSeries } from './prometheus/edge-request-series';
import { EdgeUpstreamSeries } from './prometheus/edge-series';
import { registerOperatorSeries } from './prometheus/operator-series';
import { upstreamExchanges, watchUpstreamExchanges } from './prometheus/upstream-exchanges';
import { prometheusRouter } from './prometheus/router';
import { requireReady } from './readiness/require-ready';
import { serverSdkRouter } from './server-sdk/router';
import { requireServerToken } from './server-sdk/server-token';
import { TokenValidator } from './token-validation/token-validator';
import { registerValidationMetrics } from './token-validation/validation-metrics';
import { validationClient } from './token-validation/validation-client';
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
  // Series of the environments (backup, change streams) are moved to the app's registry below.
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
  const features = first.features;
  const metrics = new ProxyMetrics(features, config.prometheusCacheInterval);
  usageHooks.metrics = metrics;
  for (const { name } of staging.getMetricsAsArray()) {
    const metric = staging.getSingleMetric(name);
    if (metric) metrics.registry.registerMetric(metric);
  }
  registerEngineMetrics(metrics.registry, environments);
  registerEdgeRequestSeries(metrics.registry, metrics.requestSeries, identity);
  edgeUpstream.trackRegistrations(() => environments.environments.map((e) => e.features));
  const environmentLabelList = environmentLabels(environments);
  registerOperatorSeries(metrics.registry, {
    environments: environments.environments.map((e, i) => ({
      label: environmentLabelList[i],
      stats: () => e.features.stats,
    })),
    budgets: { answer_cache: budget.evaluation.answers.budget, memo: budget.evaluation.memo },
    streamLimit: budget.streams.limit,
  });
  // Several environments: a scrape shows the key's own environment's series only.
  const scrapeViews = new Map<Environment, (text: string) => string>();
  if (environments.environments.length > 1 || environments.named) {
    registerEnvironmentMetrics(metrics.registry, environments);
    const labels = environmentLabels(environments);
    environments.environments.forEach((env, i) =>
      scrapeViews.set(env, environmentScrape(labels[i], env === first)),
    );
  }
  metrics.trackClientUsage(usageOfAll(environments.environments.map((e) => e.clientUsage)));

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

  const proxyPath = `${config.proxyBasePath}/proxy`;
  // The Unleash frontend API (Unleash Edge's paths): the /proxy routers, mounted at each path.
  const frontendPath = `${config.proxyBasePath}/api/frontend`;
  const edgeProxyPath = `${config.proxyBasePath}/api/proxy`;
  const clientPaths = [proxyPath, frontendPath, edgeProxyPath];
  const header = config.clientKeysHeaderName;
  const serverTokens = config.expServerSideSdkConfig.tokens;
  // who may call what: the key step's options of each kind of route, with their refusals
  const {
    frontend: frontendKeyOptions,
    client: clientToken,
    usage: usageKey,
  } = keyStepOptions(keys, header, serverTokens);
  const usageOf = (res: Response): ClientUsage => scopeOf(res).environment.clientUsage;

  // The gate of every endpoint, and the same steps in front of Express's cold routes, in this order.
  const requestMetrics = new RequestMetrics(metrics.requestSeries);
  const cors = corsMiddleware(config.cors);
  const bodyResponse = [compression({ threshold: 1024 })];
  const access = accessMiddleware(config.access);
  const gate = new Gate({
    allowed: addressCheck(config.access),
    ready: environments,
    cors: asNodeMiddleware(cors),
    corsHeaders: new CorsHeaderMemo(cors),
    requestMetrics,
    body: new RequestBody(config.maxBodySize),
    bodyResponse: bodyResponse.map(asNodeMiddleware),
    errors: new ErrorAnswers(config.logger),
  });
  const evaluationKey = frontendKey(keys, frontendKeyOptions);
  const ofrepPath = `${config.proxyBasePath}/ofrep`;
  // OFREP's key, resolved in one place (`resolveOfrepKey`) for its endpoints and its other routes
  const ofrepKeyOptions = { keys, header, serverTokens };
  const ofrep = ofrepRoutes({
    features,
    pipeline: first.all.pipeline,
    streams: first.changeStreams,
    ready: environments,
    scopeOf: (res) => ofrepScopeOf(scopeOf(res)),
    bodies: budget.evaluation.bodies,
    maxBodySize: config.maxBodySize,
    vary: config.keyVary.ofrep,
    access: {
      clientKeys: keys.clientKeySecrets,
      resolve: (req, res, candidates) => resolveOfrepKey(ofrepKeyOptions, req, res, candidates),
    },
  });
  const ofrepEvaluate = {
    basePath: ofrepPath,
    key: ofrepKey(ofrepKeyOptions),
    bulk: ofrep.bulk,
    scopeOf: ofrepScopeOf,
    vary: config.keyVary.ofrep,
  };
  const front = new Front(gate, [
    proxyListEndpoint({
      paths: clientPaths,
      key: evaluationKey,
      memoSound: enrichers.length === 0 && config.trustProxy === false,
    }),
    frontendFeatureEndpoint(frontendPath, evaluationKey),
    ofrepSingleEndpoint(ofrepEvaluate),
    ofrepBulkEndpoint(ofrepEvaluate),
  ]);

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  // ALLOW_LIST / DENY_LIST: 403 before anything else (the front's gate checks the same first).
  if (access) app.use(access);
  app.use(front.middleware);
  // Express's cold routes: every response passes the gate's request series, CORS and compression.
  app.use(requestMetrics.middleware, cors, ...bodyResponse);
  if (config.enableOAS) app.use(`${config.proxyBasePath}/docs`, docsRouter(config));
  app.use(proxyPath, healthRouter(environments));
  // Unleash Edge's internal backstage and chain endpoint (see backstage/ and edge-api/).
  const sampler = config.disableStatusEndpoint
    ? undefined
    : new StatusSampler(metrics.requestSeries, validator);
  const backstagePath = `${config.proxyBasePath}/internal-backstage`;
  const status = sampler && { sampler, budget, backstagePath };
  const backstage = backstageRouter({ config, environments, metrics, keys, validator, status });
  app.use(`${config.proxyBasePath}/internal-backstage`, backstage);
  app.use(
    config.proxyBasePath || '/',
    edgeValidateRouter(keys, new AddressBudget(config.edgeValidateTokensPerSecond)),
  );
  app.use([...clientPaths, `${config.proxyBasePath}/api/client`], requireReady(environments));
  // These authenticate by themselves: server-side SDK tokens are accepted there. They read the
  // first environment, which answers 503 while it is not served (another one may be).
  const firstServed: RequestHandler = (_req, res, next) => {
    const refused = environmentRefused(first.all);
    if (refused) res.setHeader('Retry-After', '1');
    next(refused);
  };
  app.use(
    proxyPath,
    serverSdkRouter({
      features,
      auth: [requireServerToken(serverTokens), firstServed],
      vary: config.keyVary.clientApi,
    }),
  );
  app.use(
    clientPaths,
    clientMetricsRouter({
      usage: first.clientUsage,
      usageOf,
      auth: requireScope(usageKey),
      maxBodySize: config.maxBodySize,
    }),
  );
  // A scrape shows its key's environment, also while that environment cannot be served (ready 0).
  app.use(
    proxyPath,
    prometheusRouter(
      metrics,
      (res) => scrapeViews.get(scopeOf(res).environment),
      requireScope({ ...frontendKeyOptions, whileUnserved: true }),
    ),
  );
  // other paths under the evaluation paths: the key first, then 404
  app.use(clientPaths, requireScope(frontendKeyOptions));
  // The client API for backend SDKs (Unleash Edge's): client tokens, limited to their projects.
  const clientApiPath = `${config.proxyBasePath}/api`;
  const clientApiAuth = requireScope(clientToken);
  const bulkMetrics = bulkMetricsRouter({ usageOf, auth: clientApiAuth, maxBodySize: config.maxBodySize });
  app.use(clientApiPath, bulkMetrics);
  app.use(
    clientApiPath,
    serverSdkRouter({
      features,
      featuresOf: (res) => scopeOf(res).features,
      auth: clientApiAuth,
      vary: config.keyVary.clientApi,
    }),
  );
  app.use(
    clientApiPath,
    clientMetricsRouter({
      usage: first.clientUsage,
      usageOf,
      auth: clientApiAuth,
      maxBodySize: config.maxBodySize,
    }),
  );
  app.use(ofrepPath, ofrep.router);
  app.use(notFoundHandler);
  app.use(errorMiddleware(config.logger));
  // Enrichers and `trustProxy` read Express's request: Express then stays in front of the front.
  const listener: RequestListener =
    enrichers.length === 0 && config.trustProxy === false ? front.listener(app) : app;

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
    features,
    clientUsage: first.clientUsage,
    changeStreams: first.changeStreams,
    metrics,
    environments,
    tokenValidator: validator,
    budget,
  });
}
