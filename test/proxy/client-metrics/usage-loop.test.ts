import http, { type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp, type ProxyApp } from '../../../src/proxy/app';
import type { FeatureInterface } from '../../../src/proxy/upstream/sdk/types';
import { capturingLogger } from '../../support/logger';
import { waitFor } from '../../support/proxy';

// Two instances whose upstreams form a loop (A's upstream is B, B's is A), both started from a
// bootstrap, on loopback: usage and registrations forwarded round the loop come back to the
// instance that first forwarded them, which recognises its own marker and drops them.

const TOKEN = 'loop-upstream-token-0123456789abcdef';
const FLAG = {
  name: 'looped-flag',
  enabled: true,
  project: 'default',
  strategies: [{ name: 'default', parameters: {} }],
} as unknown as FeatureInterface;

interface Instance {
  app: ProxyApp;
  url: string;
  server: http.Server;
  logger: ReturnType<typeof capturingLogger>;
}

/** A server listening before its app exists, so each instance can be given the other's URL. */
async function socket(): Promise<{ server: http.Server; url: string; serve: (app: ProxyApp) => void }> {
  let listener: RequestListener | undefined;
  const server = http.createServer((req, res) => {
    if (listener) listener(req, res);
    else res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, serve: (app) => (listener = app) };
}

let a: Instance;
let b: Instance;

beforeEach(async () => {
  const [sa, sb] = [await socket(), await socket()];
  const make = (upstreamUrl: string) => {
    const logger = capturingLogger();
    const app = createApp(
      {
        flagsUrl: `${upstreamUrl}/api`,
        flagsApiToken: TOKEN,
        clientKeys: ['loop-client-key-0123456789'],
        expBootstrap: { data: [FLAG] },
        refreshInterval: 60_000,
        metricsInterval: 60_000, // forwarded by the test (flush), one hop at a time
        prometheusCacheInterval: 0,
        logger,
      },
      {},
    );
    return { app, logger };
  };
  const madeA = make(sb.url);
  const madeB = make(sa.url);
  sa.serve(madeA.app);
  sb.serve(madeB.app);
  a = { ...madeA, url: sa.url, server: sa.server };
  b = { ...madeB, url: sb.url, server: sb.server };
  for (const { url } of [a, b])
    await waitFor(async () => (await fetch(`${url}/proxy/health`)).status === 200, 15_000);
});

afterEach(async () => {
  for (const { app, server } of [a, b]) {
    await app.close();
    await new Promise((resolve) => server.close(resolve));
  }
});

const post = (url: string, path: string, body: unknown) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'loop-client-key-0123456789' },
    body: JSON.stringify(body),
  });

// (each instance's SDK also reports its own usage, as `flags-proxy`, to the other: the test follows `web`'s)
const pendingApps = (x: Instance) =>
  x.app.clientUsage.aggregator
    .pending()
    .map((p) => p.appName)
    .filter((name) => name !== 'flags-proxy');
const pendingRegistrations = (x: Instance) =>
  x.app.clientUsage.registrations
    .list()
    .map((r) => r.appName)
    .filter((name) => name !== 'flags-proxy');

test('usage and registrations forwarded round a loop of two instances come back once and are dropped there', async () => {
  const now = new Date().toISOString();
  expect(
    (
      await post(a.url, '/proxy/client/metrics', {
        appName: 'web',
        bucket: { start: now, stop: now, toggles: { 'looped-flag': { yes: 3, no: 1 } } },
      })
    ).status,
  ).toBe(202);
  expect(
    (await post(a.url, '/proxy/client/register', { appName: 'web', instanceId: 'browser-1' })).status,
  ).toBe(202);
  expect(pendingApps(a)).toEqual(['web']);

  // A → B: B holds them, as usage of a downstream instance
  await a.app.clientUsage.forwarder.flush();
  expect(pendingApps(a)).toEqual([]);
  expect(pendingApps(b)).toEqual(['web']);
  expect(pendingRegistrations(b)).toEqual(['web']);

  // B → A: A recognises what it forwarded itself, and drops it
  await b.app.clientUsage.forwarder.flush();
  expect(pendingApps(b)).toEqual([]);
  expect(pendingApps(a)).toEqual([]);
  expect(pendingRegistrations(a)).toEqual([]);
  const loopLines = a.logger.lines.filter((l) => l.msg.includes('the upstreams form a loop'));
  expect(loopLines.map((l) => l.level)).toEqual(['warn']);
  const scrape = await (
    await fetch(`${a.url}/proxy/internal-backstage/prometheus`, {
      headers: { Authorization: 'loop-client-key-0123456789' },
    })
  ).text();
  const dropped = /^flags_proxy_client_usage_dropped_total\{reason="loop"\} (\d+)$/m.exec(scrape);
  expect(Number(dropped?.[1])).toBeGreaterThanOrEqual(2);

  // the loop has stopped: nothing goes round again
  await a.app.clientUsage.forwarder.flush();
  expect(pendingApps(b)).toEqual([]);
  expect(pendingRegistrations(b)).toEqual([]);
}, 60_000);

test('a chain header longer than any chain of instances is taken for a loop; a client SDK’s usage (no header) is kept', async () => {
  const now = new Date().toISOString();
  const long = Array.from({ length: 33 }, (_, i) => i.toString(16).padStart(32, '0')).join(',');
  const res = await fetch(`${a.url}/proxy/client/metrics`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Authorization: 'loop-client-key-0123456789',
      'flags-proxy-chain': long,
    },
    body: JSON.stringify({
      appName: 'far',
      bucket: { start: now, stop: now, toggles: { f: { yes: 1, no: 0 } } },
    }),
  });
  expect(res.status).toBe(202);
  expect(pendingApps(a)).toEqual([]);
  await post(a.url, '/proxy/client/metrics', {
    appName: 'near',
    bucket: { start: now, stop: now, toggles: { f: { yes: 1, no: 0 } } },
  });
  expect(pendingApps(a)).toEqual(['near']);
});
