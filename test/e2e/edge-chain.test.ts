/**
 * A chain as Unleash Edge users build one: two built proxies, each configured only by Edge's names
 * (`UPSTREAM_URL`, `TOKENS`), the lower one using the upper one as its upstream, in front of a real
 * flags-server. Tokens are validated up the chain (`/edge/validate`), definitions flow down
 * (`/api/client/features`) and usage flows up (`/api/client/metrics`) to the flags-server's store.
 */
import { InMemoryStorageProvider, UnleashClient } from 'unleash-proxy-client';
import { EXAMPLE_FEATURES_FILE, type RunningFlagServer } from '../../src/server';
import type { HourlyUsage } from '../../src/server/client-metrics/client-store';
import { startBuiltProxy, type BuiltProxy } from '../support/built-proxy';
import { freePort } from '../support/listen';
import { waitFor } from '../support/proxy';
import { startTestFlagServer } from './stack';

const TOP_TOKEN = '*:development.chain-top-client-token-0123456789';
const EDGE_TOKEN = '*:development.chain-edge-client-token-0123456789';
const FRONTEND = '*:development.chain-frontend-token-0123456789';
const MADE_UP = '*:development.made-up-frontend-token-0123456789';

let flagServer: RunningFlagServer;
let top: BuiltProxy;
let edge: BuiltProxy;
const clients: UnleashClient[] = [];

beforeAll(async () => {
  // The three start at once (the flags-server's PGlite takes seconds, each proxy a second of its own
  // process); each proxy polls its upstream until it answers, and the chain is used once both are
  // ready. Their ports are picked before any of them listens: distinct, so none takes another's.
  const ports = new Set<number>();
  while (ports.size < 3) ports.add(await freePort());
  const [flagPort, topPort, edgePort] = [...ports];
  const intervals = { FLAGS_FETCH_INTERVAL: '200', FLAGS_METRICS_INTERVAL: '300' };
  const starting = {
    flagServer: startTestFlagServer(EXAMPLE_FEATURES_FILE, {
      port: flagPort,
      featuresWatchInterval: 0,
      clientTokens: [TOP_TOKEN, EDGE_TOKEN],
      frontendTokens: [FRONTEND],
    }).then((s) => (flagServer = s)),
    top: startBuiltProxy({
      UPSTREAM_URL: `http://127.0.0.1:${flagPort}`,
      TOKENS: TOP_TOKEN,
      PORT: String(topPort),
      ...intervals,
    }).then((p) => (top = p)),
    edge: startBuiltProxy({
      UPSTREAM_URL: `http://127.0.0.1:${topPort}`,
      TOKENS: EDGE_TOKEN,
      PORT: String(edgePort),
      ...intervals,
    }).then((p) => (edge = p)),
  };
  // all settled before anything is used (or afterAll stops what did start)
  const results = await Promise.allSettled(Object.values(starting));
  for (const r of results) if (r.status === 'rejected') throw r.reason;
  for (const proxy of [top, edge])
    await waitFor(
      async () => (await fetch(`${proxy.origin}/internal-backstage/ready`)).status === 200,
      15_000,
    );
}, 60_000);

afterAll(async () => {
  for (const client of clients.splice(0)) client.stop();
  await edge?.stop();
  await top?.stop();
  await flagServer?.close();
});

const frontend = (proxy: BuiltProxy, key: string) =>
  fetch(`${proxy.origin}/api/frontend?userId=alice`, { headers: { Authorization: key } });

test('the lower proxy serves the definitions it reads through the upper one', async () => {
  const res = await fetch(`${edge.origin}/internal-backstage/features`, {
    headers: { Authorization: EDGE_TOKEN },
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { development: { features: Array<{ name: string }> } };
  expect(body.development.features.map((f) => f.name)).toContain('beta-dashboard');
});

test('a frontend token the flags-server knows is accepted at the edge of the chain, and a made-up one refused', async () => {
  const accepted = await frontend(edge, FRONTEND);
  expect(accepted.status).toBe(200);
  const toggles = ((await accepted.json()) as { toggles: Array<{ name: string }> }).toggles.map(
    (t) => t.name,
  );
  expect(toggles).toContain('beta-dashboard');
  expect((await frontend(edge, MADE_UP)).status).toBe(401);
  // the upper proxy answered the lower one's question from the flags-server's word
  const validated = await fetch(`${top.origin}/edge/validate`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ tokens: [FRONTEND, MADE_UP] }),
  });
  expect(await validated.json()).toEqual({
    tokens: [
      { token: FRONTEND, type: 'frontend', environment: 'development', projects: ['*'], status: 'Validated' },
    ],
  });
  const listed = (await (await fetch(`${edge.origin}/internal-backstage/tokens`)).json()) as {
    tokenValidationStatus: Array<{ type: string; status: string }>;
    invalidTokenCount: number;
  };
  expect(listed.tokenValidationStatus).toContainEqual(
    expect.objectContaining({ type: 'frontend', status: 'Validated' }),
  );
  expect(listed.invalidTokenCount).toBe(1);
  expect(edge.output() + top.output()).not.toContain('chain-frontend-token');
  // many unknown tokens in one request wait on one signal of the client going, without a leak warning
  const many = Array.from({ length: 40 }, (_, i) => `*:development.made-up-${i}-0123456789`);
  const manyAnswer = await fetch(`${top.origin}/edge/validate`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ tokens: many }),
  });
  expect(await manyAnswer.json()).toEqual({ tokens: [] });
  expect(top.output()).not.toContain('MaxListenersExceededWarning');
});

test('usage a frontend SDK reports at the edge of the chain arrives in the flags-server', async () => {
  const appName = 'chain-sdk';
  const client = new UnleashClient({
    url: `${edge.origin}/api/frontend`,
    clientKey: FRONTEND,
    appName,
    refreshInterval: 60,
    metricsInterval: 60,
    metricsIntervalInitial: 0,
    storageProvider: new InMemoryStorageProvider(),
    context: { userId: 'alice' },
  });
  clients.push(client);
  await client.start();
  expect(client.isEnabled('beta-dashboard')).toBe(true);
  client.isEnabled('beta-dashboard');
  client.isEnabled('legacy-export');
  await client.sendMetrics();
  let usage: HourlyUsage[] = [];
  await waitFor(async () => {
    usage = await flagServer.flagServer.stores.clients.usage({ appName });
    return usage.length >= 2;
  }, 15_000);
  const byFeature = Object.fromEntries(usage.map((u) => [u.featureName, u]));
  expect(byFeature['beta-dashboard']).toMatchObject({ yes: 2, no: 0 });
  expect(byFeature['legacy-export']).toMatchObject({ yes: 0, no: 1 });
}, 30_000);
