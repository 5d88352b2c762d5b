import compression from 'compression';
import express, { type Express } from 'express';
import { errorMiddleware, notFoundHandler } from '../common/http/error-middleware';
import { logEffectiveConfig } from '../common/logging/redact';
import { PROXY_OPTIONS } from './config/options';
import { parseConfig } from './config/parse-config';
import type { ProxyConfig, ProxyOptions } from './config/types';
import { keyCheck } from './auth/client-key';
import { createBackup } from './backup/create-backup';
import { ClientUsage } from './client-metrics/client-usage';
import { clientMetricsRouter } from './client-metrics/router';
import { CorsHeaderMemo } from './cors/cors-headers';
import { corsMiddleware } from './cors/cors-middleware';
import { docsRouter } from './docs/router';
import { Evaluator } from './evaluation/evaluator';
import { installFastLane } from './evaluation/fast-lane';
import { installPostLane } from './evaluation/post-lane';
import { EvaluationPipeline } from './evaluation/pipeline';
import { evaluationRouter } from './evaluation/router';
import { frontendFeatureRouter } from './frontend-api/feature-router';
import { healthRouter } from './health/router';
import { ChangeStreams } from './ofrep/event-stream';
import { ofrepRouter } from './ofrep/router';
import { loadEnrichers, loadStrategies } from './plugins/load-plugins';
import { ProxyMetrics } from './prometheus/proxy-metrics';
import { RequestMetrics } from './prometheus/request-metrics';
import { prometheusRouter } from './prometheus/router';
import { requireReady } from './readiness/require-ready';
import { serverSdkRouter } from './server-sdk/router';
import { requireClientKeyOrServerToken, requireServerToken } from './server-sdk/server-token';
import { upstreamAgent } from './transport/agent';
import type { FeatureRepository } from './upstream/feature-repository';
import { UnleashFeatureRepository } from './upstream/unleash-repository';

/** The Express app of a proxy, plus what must be awaited or closed. It never listens by itself. */
export type ProxyApp = Express & {
  /** Resolves once the first synchronisation (or a configured bootstrap) succeeded. */
  whenReady(): Promise<void>;
  /** Stops polling and timers and flushes usage metrics upstream. */
  close(): Promise<void>;
  readonly proxyConfig: ProxyConfig;
  readonly features: FeatureRepository;
  /** Usage metrics of client SDKs waiting to be forwarded upstream. */
  readonly clientUsage: ClientUsage;
  /** The open OFREP change-notification streams; `close()` ends them. */
  readonly changeStreams: ChangeStreams;
  /** The app's Prometheus registry and what a scrape answers. */
  readonly metrics: ProxyMetrics;
};

/** Assembles a proxy: configuration in, Express app out. */
export function createApp(options: ProxyOptions = {}, env: NodeJS.ProcessEnv = process.env): ProxyApp {
  const config = parseConfig(options, env);
  logEffectiveConfig(config.logger, config, PROXY_OPTIONS, ['expBootstrap.urlHeaders']);
  const strategies = loadStrategies(config.customStrategies);
  const enrichers = loadEnrichers(config.expCustomEnrichers);
  const agent = upstreamAgent(config);
  const backup = createBackup(config);
  const features = new UnleashFeatureRepository({
    config,
    strategies,
    httpOptions: { rejectUnauthorized: config.httpOptions.rejectUnauthorized, agent },
    backup,
  });
  const proxyPath = `${config.proxyBasePath}/proxy`;
  // The Unleash frontend API (Unleash Edge's paths): the /proxy routers, mounted at both paths.
  const frontendPath = `${config.proxyBasePath}/api/frontend`;
  const clientPaths = [proxyPath, frontendPath];
  const metrics = new ProxyMetrics(features);
  backup?.register(metrics.registry);
  const clientUsage = new ClientUsage({
    config,
    httpOptions: { rejectUnauthorized: config.httpOptions.rejectUnauthorized, agent },
    onDrop: metrics.onClientUsageDrop,
    onForward: metrics.onClientUsageForward,
  });
  metrics.trackClientUsage(clientUsage);

  const evaluator = new Evaluator(features, config.logger);
  const pipeline = new EvaluationPipeline({
    evaluator,
    environment: config.environment,
    enrichers,
    enableAllEndpoint: config.enableAllEndpoint,
    contextLimits: {
      maxProperties: config.maxContextProperties,
      maxValueLength: config.maxContextValueLength,
      maxTotalLength: config.maxContextSize,
    },
  });
  const checkKey = keyCheck(config.clientKeysHeaderName, config.clientKeys, 'client key');
  const changeStreams = new ChangeStreams({
    features,
    maxStreams: config.maxStreams,
    heartbeatMs: config.streamHeartbeatInterval,
    registry: metrics.registry,
  });
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  // Every response passes these, in this order (the evaluation fast lane's too).
  const requestMetrics = new RequestMetrics(metrics.requestSeries);
  const cors = corsMiddleware(config.cors);
  const everyResponse = [requestMetrics.middleware, cors];
  const bodyResponse = [compression({ threshold: 1024 })];
  app.use(...everyResponse, ...bodyResponse);
  if (config.enableOAS) app.use(`${config.proxyBasePath}/docs`, docsRouter(config));
  app.use(proxyPath, healthRouter(features));
  app.use(clientPaths, requireReady(features));
  // These two authenticate by themselves: server-side SDK tokens are accepted there.
  app.use(
    proxyPath,
    serverSdkRouter({ features, auth: requireServerToken(config.expServerSideSdkConfig.tokens) }),
  );
  app.use(
    clientPaths,
    clientMetricsRouter({
      usage: clientUsage,
      auth: requireClientKeyOrServerToken({
        clientKeysHeaderName: config.clientKeysHeaderName,
        clientKeys: config.clientKeys,
        serverTokens: config.expServerSideSdkConfig.tokens,
      }),
      maxBodySize: config.maxBodySize,
    }),
  );
  app.use(clientPaths, (req, _res, next) =>
    next(checkKey(req.headers[config.clientKeysHeaderName], req.socket)),
  );
  app.use(proxyPath, prometheusRouter(metrics));
  app.use(clientPaths, evaluationRouter(pipeline, config.maxBodySize));
  app.use(frontendPath, frontendFeatureRouter(pipeline, config.maxBodySize));
  app.use(
    `${config.proxyBasePath}/ofrep`,
    ofrepRouter({
      features,
      pipeline,
      maxBodySize: config.maxBodySize,
      auth: {
        clientKeysHeaderName: config.clientKeysHeaderName,
        clientKeys: config.clientKeys,
        serverTokens: config.expServerSideSdkConfig.tokens,
      },
      streams: changeStreams,
    }),
  );
  app.use(notFoundHandler);
  app.use(errorMiddleware(config.logger));
  const laneOptions = {
    paths: clientPaths,
    pipeline,
    features,
    clientKeysHeaderName: config.clientKeysHeaderName,
    checkKey,
    enabled: pipeline.synchronous && config.trustProxy === false,
    requestMetrics,
    cors: new CorsHeaderMemo(cors),
    bodyResponse,
    onError: errorMiddleware(config.logger),
  };
  installFastLane(app, laneOptions);
  installPostLane(app, { ...laneOptions, maxBodySize: config.maxBodySize });

  return Object.assign(app, {
    whenReady: () => features.whenReady(),
    close: async () => {
      changeStreams.close();
      await Promise.all([clientUsage.close(), features.close()]);
      await backup?.close();
      metrics.close();
    },
    proxyConfig: config,
    features,
    clientUsage,
    changeStreams,
    metrics,
  });
}
