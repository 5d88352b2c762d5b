import cluster from 'node:cluster';
import type { Server } from 'node:http';
import { ConfigError, resolveOptions } from '../common/config/resolve';
import { tell } from '../common/logging/logger';
import { createApp, type ProxyApp } from './app';
import { runPrimary, type RunningPrimary } from './cluster/primary';
import { isClusterWorker, joinCluster, namingWorker } from './cluster/worker';
import { describeContract } from './config/contract';
import { PROXY_OPTIONS } from './config/options';
import { listenAll, servingCredentials } from './serving/listeners';
import { upstreamTlsOptions } from './transport/upstream-tls';
import { parseConfig } from './config/parse-config';
import type { ProxyOptions } from './config/types';

export type { RunningPrimary } from './cluster/primary';

/** How long requests in flight may take to finish on shutdown before connections are cut. */
const SHUTDOWN_GRACE_MS = 10_000;

export interface RunningProxy {
  kind: 'proxy';
  app: ProxyApp;
  /** The plain-HTTP server (with TLS_ENABLE, the HTTPS one is `servers[1]`). */
  server: Server;
  servers: Server[];
  /** Stops accepting, finishes requests in flight, flushes usage metrics and stops polling. */
  stop(): Promise<void>;
}

/** `workers` alone, so a single process does not parse (and log) its configuration twice. */
function workerCount(options: ProxyOptions, env: NodeJS.ProcessEnv): number {
  const spec = PROXY_OPTIONS.filter((o) => o.key === 'workers');
  const { values, problems } = resolveOptions(spec, options, env);
  if (problems.length > 0) throw new ConfigError(problems);
  return values.get('workers') as number;
}

/**
 * Listens on `port` / `PORT` / `PROXY_PORT` (default 3000; 3063 under Unleash Edge's names), and with
 * TLS_ENABLE on `TLS_SERVER_PORT` over HTTPS beside it (`serving/listeners.ts`). With `workers` /
 * `FLAGS_WORKERS` above 1 this process becomes a `node:cluster` primary that runs that many workers
 * on the ports; each worker runs this same program, whose `start()` then serves as one of them.
 */
export async function start(
  options: ProxyOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<RunningProxy | RunningPrimary> {
  if (cluster.isPrimary && workerCount(options, env) > 1) {
    // Every problem of the configuration stops the primary, before any worker is forked.
    const config = parseConfig(options, env);
    // The TLS files too: a worker that cannot read them would only die and be restarted.
    servingCredentials(config.tls);
    upstreamTlsOptions(config.upstreamTls);
    const workerEnv = Object.fromEntries(
      Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'),
    );
    return runPrimary({
      workers: config.workers,
      logger: config.logger,
      env: workerEnv,
      scrapeCacheMs: config.prometheusCacheInterval,
    });
  }
  return serve(options, env);
}

async function serve(options: ProxyOptions, env: NodeJS.ProcessEnv): Promise<RunningProxy> {
  const app = createApp(options, env);
  const { port, logger, proxyBasePath, tls } = app.proxyConfig;
  const inCluster = isClusterWorker();
  const listener = inCluster ? namingWorker(app.listener, `${proxyBasePath}/proxy/health`) : app.listener;
  // Joined before listening: a worker may be handed its first connection together with the
  // primary's listening acknowledgement, and a scrape then must already get the cluster's aggregate.
  const onPrimaryShutdown: { run?: () => void } = {};
  if (inCluster) app.metrics.renderWith(joinCluster(app.metrics.registry, () => onPrimaryShutdown.run?.()));
  const { servers, description } = await listenAll(listener, port, tls).catch(async (err: unknown) => {
    await app.close();
    throw err;
  });
  const [server] = servers;
  const who = inCluster ? `worker ${cluster.worker?.id ?? '?'} ` : '';
  tell(
    logger,
    `flags-proxy ${who}listening on ${description}, base path "${proxyBasePath}" (endpoints under ${proxyBasePath}/proxy, backstage under ${proxyBasePath}/internal-backstage); ${describeContract(app.proxyConfig)}`,
  );
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= new Promise<void>((resolve) => {
      tell(logger, `flags-proxy ${who}stopping: finishing requests in flight, then sending usage`);
      // Open change streams (of every environment) would hold the server for the whole grace period.
      for (const environment of app.environments.environments) environment.changeStreams.close();
      let open = servers.length;
      for (const s of servers) {
        s.close(() => {
          open -= 1;
          if (open === 0) resolve();
        });
        s.closeIdleConnections();
      }
      // Keep-alive clients that keep sending would hold the server open: cut them after a grace period.
      setTimeout(() => servers.forEach((s) => s.closeAllConnections()), SHUTDOWN_GRACE_MS).unref();
    })
      .then(() => app.close())
      .then(() => tell(logger, `flags-proxy ${who}stopped`));
    return stopping;
  };
  const stopAndExit = () => void stop().then(() => process.exit(0));
  onPrimaryShutdown.run = stopAndExit;
  const onSignal = (signal: NodeJS.Signals) => {
    tell(logger, `received ${signal}`);
    stopAndExit();
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  return { kind: 'proxy', app, server, servers, stop };
}
