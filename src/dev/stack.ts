import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createApp, type ProxyApp } from '../proxy/app';
import type { ProxyOptions } from '../proxy/config/types';
import { startFlagServer, type FlagServerOptions, type RunningFlagServer } from '../server';

type Env = Record<string, string | undefined>;

/** Fixed, clearly-for-development credentials of the local stack. Never use them anywhere else. */
/**
 * The proxy's upstream token, in Unleash's format (every project, environment development): with it
 * the proxy serves that environment and validates other Unleash tokens, such as the frontend token
 * below, against flags-server's `/edge/validate`.
 */
export const DEV_CLIENT_TOKEN = '*:development.dev-client-token';
export const DEV_ADMIN_TOKEN = 'dev-admin-token';
export const DEV_CLIENT_KEY = 'dev-client-key';
/**
 * A frontend token in Unleash's format (every project, environment development). flags-server
 * confirms it on `POST /edge/validate`; the proxy accepts it as a client key once it validates
 * unknown keys against flags-server's /edge/validate.
 */
export const DEV_FRONTEND_TOKEN = '*:development.dev-frontend-token';

/** Milliseconds between the proxy's polls of the flag server in the local stack. */
export const DEV_REFRESH_INTERVAL = 1000;

export interface DevStackOptions {
  /** Overrides for the flag server (tests use `dataDir: 'memory'`, `port: 0`, a silent logger). */
  server?: FlagServerOptions;
  /** Overrides for the proxy (tests use `port: 0`, a silent logger). */
  proxy?: ProxyOptions;
  /** How long to wait for the proxy's first synchronisation before giving up waiting (ms). */
  readyTimeout?: number;
  /** Milliseconds to wait for requests in flight on shutdown before connections are cut. */
  shutdownTimeout?: number;
}

export interface DevStack {
  flagServer: RunningFlagServer;
  proxy: ProxyApp;
  proxyServer: Server;
  /** e.g. http://localhost:3000 (without the base path) */
  proxyUrl: string;
  /** e.g. http://localhost:4242 */
  serverUrl: string;
  /** False when the proxy did not synchronise within `readyTimeout`. */
  ready: boolean;
  /** Stops the proxy (requests in flight finish, usage metrics flushed), then the flag server. */
  close(): Promise<void>;
}

function listen(app: ProxyApp, port: number): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const server = app.listen(port, (err?: Error) => (err ? reject(err) : resolve(server)));
    server.once('error', reject);
  });
}

async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Starts flags-server (embedded PGlite in `.data/flags-server`, the example flags, the dev tokens)
 * and a proxy polling it, without signal handlers: the caller owns shutdown.
 *
 * Ports: the proxy reads `PORT` / `PROXY_PORT` (default 3000), the flag server `FLAGS_SERVER_PORT`
 * (default 4242; `PORT` is meant for the proxy here and is hidden from it). Every other variable
 * of either program (e.g. `FLAGS_SERVER_DATA_DIR`, `DATABASE_URL`, `LOG_LEVEL`, `PROXY_BASE_PATH`)
 * is honoured; tokens, client key and upstream URL are fixed by the stack.
 */
export async function startDevStack(
  env: Env = process.env,
  options: DevStackOptions = {},
): Promise<DevStack> {
  const { readyTimeout = 15000, shutdownTimeout = 5000 } = options;
  const flagServer = await startFlagServer(
    {
      clientTokens: [DEV_CLIENT_TOKEN],
      adminTokens: [DEV_ADMIN_TOKEN],
      frontendTokens: [DEV_FRONTEND_TOKEN],
      ...options.server,
    },
    { ...env, PORT: undefined },
    { handleSignals: false, shutdownTimeout },
  );

  let proxy: ProxyApp | undefined;
  let proxyServer: Server;
  try {
    proxy = createApp(
      {
        flagsUrl: `${flagServer.url}/api`,
        flagsApiToken: DEV_CLIENT_TOKEN,
        clientKeys: [DEV_CLIENT_KEY],
        refreshInterval: DEV_REFRESH_INTERVAL,
        ...options.proxy,
      },
      env as NodeJS.ProcessEnv,
    );
    proxyServer = await listen(proxy, proxy.proxyConfig.port);
  } catch (err) {
    await proxy?.close();
    await flagServer.close();
    throw err;
  }
  const app = proxy;
  const ready = await settlesWithin(app.whenReady(), readyTimeout);
  const proxyPort = (proxyServer.address() as AddressInfo).port;
  const serverPort = (flagServer.server.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      const cut = setTimeout(() => proxyServer.closeAllConnections(), shutdownTimeout);
      cut.unref();
      await new Promise<void>((resolve) => {
        proxyServer.close(() => resolve());
        proxyServer.closeIdleConnections();
      });
      clearTimeout(cut);
      await app.close();
      await flagServer.close();
    })();
    return closing;
  };

  return {
    flagServer,
    proxy: app,
    proxyServer,
    proxyUrl: `http://localhost:${proxyPort}`,
    serverUrl: `http://localhost:${serverPort}`,
    ready,
    close,
  };
}

/** Where the flag server keeps its data, for humans. */
function describeStorage(stack: DevStack): string {
  const { databaseUrl, dataDir } = stack.flagServer.flagServer.config;
  if (databaseUrl) return 'PostgreSQL from DATABASE_URL';
  if (dataDir === 'memory') return 'in memory (gone when the stack stops)';
  const relative = path.relative(process.cwd(), dataDir);
  const shown = relative && !relative.startsWith('..') ? relative : dataDir;
  return `embedded PostgreSQL (PGlite) in ${shown} — reset with: rm -rf ${shown}`;
}

/** The example role of the printed admin curl: a fresh name per run, so the line works as printed. */
export function exampleRoleName(now: Date = new Date()): string {
  return `qa-reviewer-${now.getTime().toString(36)}`;
}

/** The text `npm run dev` prints once both programs are up. Every curl line works as printed. */
export function devStackBanner(stack: DevStack, roleName: string = exampleRoleName()): string {
  const proxyBase = `${stack.proxyUrl}${stack.proxy.proxyConfig.proxyBasePath}/proxy`;
  const roleBody = JSON.stringify({
    name: roleName,
    description: 'Reads roles (created from the npm run dev banner)',
    type: 'root-custom',
    permissions: [{ name: 'READ_ROLE' }],
  });
  const lines = [
    '',
    'flags-proxy local stack is up',
    '',
    `  proxy          ${proxyBase}`,
    ...(stack.proxy.proxyConfig.disableStatusEndpoint
      ? []
      : [
          `  status page    ${stack.proxyUrl}${stack.proxy.proxyConfig.proxyBasePath}/internal-backstage/status  (open it in a browser: environments, requests, latency, live)`,
        ]),
    `  flags-server   ${stack.serverUrl}  (client API ${stack.serverUrl}/api/client/features)`,
    `  client key     ${DEV_CLIENT_KEY}   (frontend SDKs -> proxy)`,
    `  admin token    ${DEV_ADMIN_TOKEN}  (admin API of flags-server)`,
    `  client token   ${DEV_CLIENT_TOKEN} (proxy and server-side SDKs -> flags-server)`,
    `  frontend token ${DEV_FRONTEND_TOKEN} (scoped: every project, environment development;`,
    `                 validated against flags-server's /edge/validate)`,
    `  features file  ${stack.flagServer.flagServer.config.featuresFile} (edits reach the proxy within ~2 s)`,
    `  data           ${describeStorage(stack)}`,
    '',
    'Evaluate flags for a user:',
    `  curl -H 'Authorization: ${DEV_CLIENT_KEY}' '${proxyBase}?userId=alice'`,
    "The same with the scoped frontend token (the proxy validates it against flags-server's /edge/validate):",
    `  curl -H 'Authorization: ${DEV_FRONTEND_TOKEN}' '${stack.proxyUrl}${stack.proxy.proxyConfig.proxyBasePath}/api/frontend?userId=alice'`,
    '',
    'Create a custom role on the admin API:',
    `  curl -X POST -H 'Authorization: ${DEV_ADMIN_TOKEN}' -H 'Content-Type: application/json' -d '${roleBody}' ${stack.serverUrl}/api/admin/roles`,
    'List roles:',
    `  curl -H 'Authorization: ${DEV_ADMIN_TOKEN}' ${stack.serverUrl}/api/admin/roles`,
    '',
    'Check the scoped frontend token (type, environment, projects) as the proxy does:',
    `  curl -X POST -H 'Content-Type: application/json' -d '${JSON.stringify({ tokens: [DEV_FRONTEND_TOKEN] })}' ${stack.serverUrl}/edge/validate`,
    '',
  ];
  if (!stack.ready) {
    lines.push(
      'WARNING: the proxy has not synchronised with flags-server yet; /proxy answers 503 until it does.',
      '',
    );
  }
  lines.push('Press Ctrl-C to stop both.', '');
  return lines.join('\n');
}
