/**
 * The real frontend SDK (`unleash-proxy-client`, run in Node with its in-memory storage) against
 * the proxy on a loopback socket, the proxy polling a real flags-server with the example flags.
 */
import { InMemoryStorageProvider, UnleashClient, type IConfig } from 'unleash-proxy-client';
import { EXAMPLE_FEATURES_FILE, type RunningFlagServer } from '../../src/server';
import type { HourlyUsage } from '../../src/server/client-metrics/client-store';
import { waitFor } from '../support/proxy';
import {
  CLIENT_KEY,
  getToggles,
  listenProxy,
  startTestFlagServer,
  type ListeningProxy,
  type RequestRecord,
} from './stack';

let flagServer: RunningFlagServer;
let proxy: ListeningProxy;
const clients: UnleashClient[] = [];

beforeAll(async () => {
  flagServer = await startTestFlagServer(EXAMPLE_FEATURES_FILE, { featuresWatchInterval: 0 });
  // A short metrics interval so usage reaches flags-server while the test waits.
  proxy = await listenProxy(flagServer, { metricsInterval: 300 });
  await proxy.app.whenReady();
});

afterEach(() => {
  for (const client of clients.splice(0)) client.stop();
});

afterAll(async () => {
  await proxy?.close();
  await flagServer?.close();
});

/** A started, ready SDK; each test gives it its own `appName` to tell its requests apart. */
async function startClient(origin: string, config: Partial<IConfig> = {}): Promise<UnleashClient> {
  const client = new UnleashClient({
    url: `${origin}/proxy`,
    clientKey: CLIENT_KEY,
    appName: 'e2e-frontend',
    refreshInterval: 1,
    metricsInterval: 60,
    // 0: no start-up timer that stop() could not clear; metrics are sent explicitly below.
    metricsIntervalInitial: 0,
    storageProvider: new InMemoryStorageProvider(),
    context: { userId: 'alice' },
    ...config,
  });
  clients.push(client);
  await client.start();
  expect(client.isReady()).toBe(true);
  return client;
}

/** The requests the proxy answered for this SDK (its `unleash-appname` header), all from one connection id. */
function requestsOf(client: UnleashClient, of: ListeningProxy = proxy): RequestRecord[] {
  const sent = of.requests.filter((r) => r.headers['unleash-appname'] === client.getContext().appName);
  const ids = new Set(sent.map((r) => r.headers['unleash-connection-id']));
  expect(ids.size).toBeLessThanOrEqual(1);
  return sent;
}

describe('unleash-proxy-client against the proxy', () => {
  it('synchronises and evaluates exactly like the proxy', async () => {
    const client = await startClient(proxy.origin, { appName: 'sdk-evaluates' });
    const [first] = requestsOf(client);
    expect(first).toMatchObject({ method: 'GET', status: 200 });
    expect(first.headers.authorization).toBe(CLIENT_KEY);
    expect(first.url).toMatch(/^\/proxy\?/);

    // The same request (same context: userId, appName, environment, the SDK's sessionId) asked
    // directly gives exactly what the SDK holds.
    const direct = await getToggles(`${proxy.origin}${first.url}`);
    expect(client.getAllToggles()).toEqual([...direct.toggles.values()]);

    expect(client.isEnabled('beta-dashboard')).toBe(true);
    expect(client.isEnabled('new-checkout')).toBe(true);
    expect(client.isEnabled('legacy-export')).toBe(false);
    expect(client.isEnabled('no-such-flag')).toBe(false);
    expect(client.getVariant('search-v2')).toEqual({
      name: 'ranking-b',
      enabled: true,
      feature_enabled: true,
      payload: { type: 'json', value: '{"boost":"recency","maxResults":25}' },
    });
    expect(client.getVariant('spring-sale-banner').payload).toEqual({
      type: 'string',
      value: 'Spring sale: 20% off everything!',
    });
    expect(client.getVariant('new-checkout')).toEqual({
      name: 'disabled',
      enabled: false,
      feature_enabled: true,
    });
  });

  it('re-evaluates when the context changes', async () => {
    const client = await startClient(proxy.origin, { appName: 'sdk-context' });
    expect(client.isEnabled('beta-dashboard')).toBe(true);
    expect(client.isEnabled('eu-cookie-banner-v2')).toBe(false);

    await client.updateContext({ userId: 'dave', properties: { country: 'DE' } });
    expect(client.isEnabled('beta-dashboard')).toBe(false);
    expect(client.isEnabled('eu-cookie-banner-v2')).toBe(true);

    const last = requestsOf(client).at(-1);
    expect(last?.status).toBe(200);
    const query = new URL(last?.url ?? '/', 'http://x').searchParams;
    expect(query.get('userId')).toBe('dave');
    expect(query.get('properties[country]')).toBe('DE');
  });

  it('revalidates with If-None-Match and gets 304s while nothing changed (GET and POST)', async () => {
    for (const usePOSTrequests of [false, true]) {
      const appName = `sdk-revalidates-${usePOSTrequests ? 'post' : 'get'}`;
      const client = await startClient(proxy.origin, { appName, usePOSTrequests });
      let updates = 0;
      client.on('update', () => (updates += 1));
      await waitFor(() => requestsOf(client).some((r) => r.status === 304), 5000);

      const seen = requestsOf(client);
      const method = usePOSTrequests ? 'POST' : 'GET';
      expect(seen.every((r) => r.method === method)).toBe(true);
      expect(seen[0].status).toBe(200);
      const revalidation = seen.find((r) => r.status === 304);
      expect(revalidation?.headers['if-none-match']).toMatch(/^W\/".+"$/);
      expect(seen.filter((r) => r.status === 200)).toHaveLength(1);
      expect(updates).toBe(0);
      expect(client.isEnabled('beta-dashboard')).toBe(true);
    }
  });

  it("sends its usage metrics to the proxy's client metrics endpoint, which forwards them upstream", async () => {
    const appName = 'sdk-metrics';
    const client = await startClient(proxy.origin, { appName });
    const sent = new Promise<unknown>((resolve) => client.once('sent', resolve));
    client.isEnabled('new-checkout');
    client.isEnabled('new-checkout');
    client.isEnabled('legacy-export');
    client.getVariant('search-v2');
    await client.sendMetrics();

    const payload = (await sent) as { appName: string; bucket: { toggles: Record<string, unknown> } };
    expect(payload.appName).toBe(appName);
    const post = requestsOf(client).find((r) => r.method === 'POST');
    expect(post).toMatchObject({ url: '/proxy/client/metrics', status: 202 });

    // Forwarded under the SDK's own app name at the proxy's metrics interval.
    let usage: HourlyUsage[] = [];
    await waitFor(async () => {
      usage = await flagServer.flagServer.stores.clients.usage({ appName });
      return usage.length >= 3;
    });
    const byFeature = Object.fromEntries(usage.map((u) => [u.featureName, u]));
    expect(byFeature['new-checkout']).toMatchObject({ yes: 2, no: 0 });
    expect(byFeature['legacy-export']).toMatchObject({ yes: 0, no: 1 });
  });

  it('works behind proxyBasePath', async () => {
    const based = await listenProxy(flagServer, { proxyBasePath: '/edge/flags', metricsInterval: 60_000 });
    try {
      await based.app.whenReady();
      const client = await startClient(`${based.origin}/edge/flags`, { appName: 'sdk-base-path' });
      expect(client.isEnabled('beta-dashboard')).toBe(true);
      expect(client.getVariant('search-v2').name).toBe('ranking-b');
      client.isEnabled('new-checkout');
      await client.sendMetrics();

      const seen = requestsOf(client, based);
      expect(seen[0]).toMatchObject({ method: 'GET', status: 200 });
      expect(seen[0].url).toMatch(/^\/edge\/flags\/proxy\?/);
      expect(seen.find((r) => r.method === 'POST')).toMatchObject({
        url: '/edge/flags/proxy/client/metrics',
        status: 202,
      });
      // Without the base path there is nothing.
      expect((await getToggles(`${based.origin}/proxy?userId=alice`)).status).toBe(404);
    } finally {
      await based.close();
    }
  });
});
