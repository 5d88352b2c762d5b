import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/common/logging/logger';
import { createApp, type ProxyApp } from '../../src/proxy/app';
import type { ProxyOptions } from '../../src/proxy/config/types';
import {
  EXAMPLE_FEATURES_FILE,
  createFlagServer,
  startFlagServer,
  type FlagServerOptions,
  type RunningFlagServer,
} from '../../src/server';
import { freshPgliteDir } from '../support/pglite';

export const CLIENT_TOKEN = 'e2e-client-token';
export const ADMIN_TOKEN = 'e2e-admin-token';
export const CLIENT_KEY = 'e2e-client-key';
/** Proxy poll interval and features-file watch interval of the end-to-end stack (ms). */
export const REFRESH_INTERVAL = 200;
export const WATCH_INTERVAL = 100;

export { capturingLogger, type LogLine } from '../support/logger';

/** A private copy of the example features file in a fresh temporary folder. */
export async function copyOfExampleFeatures(): Promise<{ file: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'flags-e2e-'));
  const file = path.join(dir, 'features.json');
  await copyFile(EXAMPLE_FEATURES_FILE, file);
  return { file, remove: () => rm(dir, { recursive: true, force: true }) };
}

const testFlagServerOptions = (
  featuresFile: string,
  dataDir: string,
  options: FlagServerOptions,
): FlagServerOptions => ({
  port: 0,
  dataDir,
  featuresFile,
  featuresWatchInterval: WATCH_INTERVAL,
  clientTokens: [CLIENT_TOKEN],
  adminTokens: [ADMIN_TOKEN],
  logger: silentLogger,
  ...options,
});

/**
 * flags-server on a free loopback port, watching `featuresFile`, its PGlite in a fresh folder
 * (`freshPgliteDir()`: initdb done once per run) that `close()` removes.
 */
export async function startTestFlagServer(
  featuresFile: string,
  options: FlagServerOptions = {},
): Promise<RunningFlagServer> {
  const fresh = await freshPgliteDir();
  try {
    const running = await startFlagServer(
      testFlagServerOptions(featuresFile, fresh.dataDir, options),
      {},
      { handleSignals: false, shutdownTimeout: 1000 },
    );
    return {
      ...running,
      close: async () => {
        await running.close();
        await fresh.remove();
      },
    };
  } catch (err) {
    await fresh.remove();
    throw err;
  }
}

/**
 * The same flags-server, built now (its database takes seconds) but not listening: nothing answers
 * on `options.port` until `listen()`. For a test whose upstream must be unreachable for a while.
 */
export async function preparedTestFlagServer(
  featuresFile: string,
  options: FlagServerOptions & { port: number },
): Promise<{ listen(): Promise<void>; close(): Promise<void> }> {
  const fresh = await freshPgliteDir();
  const flagServer = await createFlagServer(
    testFlagServerOptions(featuresFile, fresh.dataDir, options),
    {},
  ).catch(async (err: unknown) => {
    await fresh.remove();
    throw err;
  });
  let server: Server | undefined;
  return {
    async listen() {
      server = await new Promise<Server>((resolve, reject) => {
        const s = flagServer.app.listen(options.port, '127.0.0.1', (err?: Error) =>
          err ? reject(err) : resolve(s),
        );
        s.once('error', reject);
      });
    },
    async close() {
      if (server) {
        const listening = server;
        listening.closeAllConnections();
        await new Promise<void>((resolve) => listening.close(() => resolve()));
      }
      await flagServer.close();
      await fresh.remove();
    },
  };
}

export interface RequestRecord {
  method: string;
  /** Path and query as the client sent them. */
  url: string;
  status: number;
  headers: http.IncomingHttpHeaders;
}

export interface ListeningProxy {
  app: ProxyApp;
  server: Server;
  /** e.g. http://127.0.0.1:38123 */
  origin: string;
  /** Every request the proxy answered, with its status, in order of completion. */
  requests: RequestRecord[];
  close(): Promise<void>;
}

/**
 * A proxy polling `upstream` (a flags-server), served on a free loopback port behind a tiny
 * recorder that notes each request's method, URL, headers and final status.
 */
export async function listenProxy(
  upstream: RunningFlagServer,
  options: ProxyOptions = {},
): Promise<ListeningProxy> {
  const app = createApp(
    {
      flagsUrl: `${upstream.url}/api`,
      flagsApiToken: CLIENT_TOKEN,
      clientKeys: [CLIENT_KEY],
      refreshInterval: REFRESH_INTERVAL,
      metricsInterval: 60_000,
      logger: silentLogger,
      ...options,
    },
    {},
  );
  const requests: RequestRecord[] = [];
  const server = http.createServer((req, res) => {
    // Noted before Express rewrites req.url while routing.
    const { method = '', url = '', headers } = req;
    res.on('finish', () => requests.push({ method, url, status: res.statusCode, headers }));
    app(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    app,
    server,
    origin: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await app.close();
    },
  };
}

export interface Toggle {
  name: string;
  enabled: boolean;
  impressionData: boolean;
  variant: { name: string; enabled: boolean; payload?: { type: string; value: string } };
}

/** `GET {url}` with the client key; the status and, for 200s, the toggles by name. */
export async function getToggles(
  url: string,
  key = CLIENT_KEY,
): Promise<{ status: number; etag: string | null; toggles: Map<string, Toggle> }> {
  const res = await fetch(url, { headers: { Authorization: key } });
  const toggles = new Map<string, Toggle>();
  if (res.status === 200) {
    const body = (await res.json()) as { toggles: Toggle[] };
    for (const t of body.toggles) toggles.set(t.name, t);
  } else {
    await res.arrayBuffer();
  }
  return { status: res.status, etag: res.headers.get('etag'), toggles };
}
