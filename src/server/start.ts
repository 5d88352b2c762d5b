import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeBoundAddress } from '../common/http/bound-address';
import { createFlagServer, type FlagServer } from './app';
import type { FlagServerOptions } from './config/types';

type Env = Record<string, string | undefined>;

export interface RunningFlagServer {
  flagServer: FlagServer;
  server: Server;
  /** e.g. http://127.0.0.1:4242 */
  url: string;
  /** Stops accepting connections, finishes requests in flight, then closes the flag server. */
  close(): Promise<void>;
}

export interface StartOptions {
  /** Close on SIGTERM/SIGINT (default true). A second signal while closing exits at once. */
  handleSignals?: boolean;
  /** Milliseconds to wait for requests in flight before connections are cut (default 10000). */
  shutdownTimeout?: number;
}

/** Creates a flag server and listens on its port (`port: 0` picks a free one). */
export async function startFlagServer(
  options: FlagServerOptions = {},
  env: Env = process.env,
  { handleSignals = true, shutdownTimeout = 10000 }: StartOptions = {},
): Promise<RunningFlagServer> {
  const flagServer = await createFlagServer(options, env);
  const { logger, port } = flagServer.config;
  let server: Server;
  try {
    server = await new Promise<Server>((resolve, reject) => {
      const s = flagServer.app.listen(port, (err?: Error) => (err ? reject(err) : resolve(s)));
      s.once('error', reject);
    });
  } catch (err) {
    await flagServer.close();
    throw err;
  }
  const address = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${address.port}`;
  logger.info(
    `flags-server listening on port ${address.port} on ${describeBoundAddress(address)} (${url} from this host)`,
  );

  let closing: Promise<void> | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) {
      logger.warn(`${signal} received again; exiting now`);
      process.exit(1);
    }
    logger.info(`${signal} received; shutting down`);
    void close();
  };
  const close = (): Promise<void> => {
    closing ??= (async () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      const timer = setTimeout(() => server.closeAllConnections(), shutdownTimeout);
      timer.unref();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      clearTimeout(timer);
      await flagServer.close();
      logger.info('flags-server stopped');
    })();
    return closing;
  };
  if (handleSignals) {
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }
  return { flagServer, server, url, close };
}
