import type { Server } from 'node:http';
import { createApp, type ProxyApp } from './app';
import type { ProxyOptions } from './config/types';

/** How long requests in flight may take to finish on shutdown before connections are cut. */
const SHUTDOWN_GRACE_MS = 10_000;

export interface RunningProxy {
  app: ProxyApp;
  server: Server;
  /** Stops accepting, finishes requests in flight, flushes usage metrics and stops polling. */
  stop(): Promise<void>;
}

/** Creates the proxy and listens on `port` / `PORT` / `PROXY_PORT` (default 3000). */
export async function start(
  options: ProxyOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<RunningProxy> {
  const app = createApp(options, env);
  const { port, logger, proxyBasePath } = app.proxyConfig;
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(port, () => resolve(s));
    s.once('error', reject);
  });
  logger.info(`flags-proxy listening on port ${port}, endpoints under ${proxyBasePath}/proxy`);
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= new Promise<void>((resolve) => {
      // Open change streams would hold the server for the whole grace period.
      app.changeStreams.close();
      server.close(() => resolve());
      server.closeIdleConnections();
      // Keep-alive clients that keep sending would hold the server open: cut them after a grace period.
      setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS).unref();
    }).then(() => app.close());
    return stopping;
  };
  const onSignal = (signal: NodeJS.Signals) => {
    logger.info(`received ${signal}, shutting down`);
    void stop().then(() => process.exit(0));
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  return { app, server, stop };
}
