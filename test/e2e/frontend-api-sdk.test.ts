/**
 * The real frontend SDKs configured as for Unleash Edge (`url: .../api/frontend`) against the proxy
 * on a loopback socket, the proxy polling a real flags-server with the example flags:
 * `unleash-proxy-client`, and `@openfeature/unleash-web-provider` under `@openfeature/web-sdk`.
 */
import { UnleashWebProvider } from '@openfeature/unleash-web-provider';
import { OpenFeature } from '@openfeature/web-sdk';
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
  proxy = await listenProxy(flagServer, { metricsInterval: 300 });
  await proxy.app.whenReady();
});

afterEach(() => {
  for (const client of clients.splice(0)) client.stop();
});

afterAll(async () => {
  await OpenFeature.close();
  await proxy?.close();
  await flagServer?.close();
});

/** The SDK configuration of an app that used Unleash Edge: only the host differs. */
function edgeConfig(appName: string, config: Partial<IConfig> = {}): IConfig {
  return {
    url: `${proxy.origin}/api/frontend`,
    clientKey: CLIENT_KEY,
    appName,
    refreshInterval: 1,
    metricsInterval: 60,
    metricsIntervalInitial: 0,
    storageProvider: new InMemoryStorageProvider(),
    context: { userId: 'alice' },
    ...config,
  };
}

async function startClient(appName: string, config: Partial<IConfig> = {}): Promise<UnleashClient> {
  const client = new UnleashClient(edgeConfig(appName, config));
  clients.push(client);
  await client.start();
  expect(client.isReady()).toBe(true);
  return client;
}

/** The requests the proxy answered for one app name. */
function requestsOf(appName: string): RequestRecord[] {
  return proxy.requests.filter((r) => r.headers['unleash-appname'] === appName);
}

describe('unleash-proxy-client with url .../api/frontend', () => {
  it('synchronises from /api/frontend and holds exactly what /proxy answers for the same request', async () => {
    const client = await startClient('edge-sdk-evaluates');
    const [first] = requestsOf('edge-sdk-evaluates');
    expect(first).toMatchObject({ method: 'GET', status: 200 });
    expect(first.url).toMatch(/^\/api\/frontend\?/);

    const sameRequestAtProxy = first.url.replace(/^\/api\/frontend/, '/proxy');
    const direct = await getToggles(`${proxy.origin}${sameRequestAtProxy}`);
    expect(client.getAllToggles()).toEqual([...direct.toggles.values()]);
    expect(client.isEnabled('beta-dashboard')).toBe(true);
    expect(client.isEnabled('legacy-export')).toBe(false);
    expect(client.getVariant('search-v2')).toMatchObject({ name: 'ranking-b', enabled: true });
  });

  it('re-evaluates at /api/frontend when the context changes', async () => {
    const client = await startClient('edge-sdk-context');
    expect(client.isEnabled('eu-cookie-banner-v2')).toBe(false);
    await client.updateContext({ userId: 'dave', properties: { country: 'DE' } });
    expect(client.isEnabled('beta-dashboard')).toBe(false);
    expect(client.isEnabled('eu-cookie-banner-v2')).toBe(true);
    const last = requestsOf('edge-sdk-context').at(-1);
    expect(last).toMatchObject({ method: 'GET', status: 200 });
    expect(last?.url).toMatch(/^\/api\/frontend\?.*userId=dave/);
  });

  it('revalidates at /api/frontend with If-None-Match and gets 304s (GET and POST)', async () => {
    for (const usePOSTrequests of [false, true]) {
      const appName = `edge-sdk-revalidates-${usePOSTrequests ? 'post' : 'get'}`;
      const client = await startClient(appName, { usePOSTrequests });
      let updates = 0;
      client.on('update', () => (updates += 1));
      await waitFor(() => requestsOf(appName).some((r) => r.status === 304), 5000);
      const seen = requestsOf(appName);
      expect(seen.every((r) => r.url.startsWith('/api/frontend'))).toBe(true);
      expect(seen.every((r) => r.method === (usePOSTrequests ? 'POST' : 'GET'))).toBe(true);
      expect(seen.filter((r) => r.status === 200)).toHaveLength(1);
      expect(seen.find((r) => r.status === 304)?.headers['if-none-match']).toMatch(/^W\/".+"$/);
      expect(updates).toBe(0);
    }
  });

  it('posts its usage to /api/frontend/client/metrics, and it reaches the upstream', async () => {
    const appName = 'edge-sdk-metrics';
    const client = await startClient(appName);
    client.isEnabled('new-checkout');
    client.isEnabled('new-checkout');
    client.isEnabled('legacy-export');
    await client.sendMetrics();
    expect(requestsOf(appName).find((r) => r.method === 'POST')).toMatchObject({
      url: '/api/frontend/client/metrics',
      status: 202,
    });
    let usage: HourlyUsage[] = [];
    await waitFor(async () => {
      usage = await flagServer.flagServer.stores.clients.usage({ appName });
      return usage.length >= 2;
    });
    const byFeature = Object.fromEntries(usage.map((u) => [u.featureName, u]));
    expect(byFeature['new-checkout']).toMatchObject({ yes: 2, no: 0 });
    expect(byFeature['legacy-export']).toMatchObject({ yes: 0, no: 1 });
  });
});

describe('@openfeature/unleash-web-provider with url .../api/frontend', () => {
  it('resolves booleans and string variants exactly as the toggles, and follows a context change', async () => {
    const domain = 'edge-openfeature';
    const provider = new UnleashWebProvider(edgeConfig('edge-openfeature'));
    await OpenFeature.setProviderAndWait(domain, provider);
    const client = OpenFeature.getClient(domain);
    try {
      const asked = requestsOf('edge-openfeature')[0];
      expect(asked).toMatchObject({ method: 'GET', status: 200 });
      expect(asked.url).toMatch(/^\/api\/frontend\?/);
      const toggles = (await getToggles(`${proxy.origin}${asked.url}`)).toggles;

      for (const name of ['beta-dashboard', 'new-checkout', 'legacy-export', 'eu-cookie-banner-v2']) {
        expect(client.getBooleanValue(name, !toggles.has(name))).toBe(toggles.get(name)?.enabled ?? false);
      }
      const banner = toggles.get('spring-sale-banner');
      expect(banner?.variant.payload?.type).toBe('string');
      const details = client.getStringDetails('spring-sale-banner', 'fallback');
      expect(details.value).toBe(banner?.variant.payload?.value);
      expect(details.variant).toBe(banner?.variant.name);

      await OpenFeature.setContext(domain, { userId: 'dave', country: 'DE' });
      expect(requestsOf('edge-openfeature').at(-1)?.url).toMatch(/userId=dave/);
      expect(client.getBooleanValue('beta-dashboard', true)).toBe(false);
      expect(client.getBooleanValue('eu-cookie-banner-v2', false)).toBe(true);
    } finally {
      await OpenFeature.clearProviders();
    }
  });
});
