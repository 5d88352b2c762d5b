/**
 * The built proxy started with nothing but what Unleash Edge's Helm chart sets (`UPSTREAM_URL`, the
 * `TOKENS` secret, `RUST_LOG`, `LOG_FORMAT`; `PORT` stands for the chart's container port, which a
 * test on a shared machine cannot bind), driven as Kubernetes, Prometheus and a frontend SDK drive
 * Edge: liveness before the upstream is reachable, readiness once it is, a keyless scrape, and
 * `unleash-proxy-client` through `/api/frontend`. Then the same under a base path.
 */
import { InMemoryStorageProvider, UnleashClient } from 'unleash-proxy-client';
import { PROXY_OPTIONS } from '../../src/proxy/config/options';
import { EXAMPLE_FEATURES_FILE } from '../../src/server';
import { startBuiltProxy, type BuiltProxy } from '../support/built-proxy';
import { freePort } from '../support/listen';
import { waitFor } from '../support/proxy';
import { preparedTestFlagServer } from './stack';

const CLIENT_TOKEN = '*:development.helm-client-token-0123456789';
const FRONTEND = '*:development.helm-frontend-token-0123456789';

/** Edge's `BASE_PATH` once it is read (as an alias of `PROXY_BASE_PATH`); our own name until then. */
const BASE_PATH_VARIABLE = PROXY_OPTIONS.find((o) => o.key === 'proxyBasePath')?.aliases?.env?.includes(
  'BASE_PATH',
)
  ? 'BASE_PATH'
  : 'PROXY_BASE_PATH';

let flagServer: { close(): Promise<void> } | undefined;
let proxy: BuiltProxy | undefined;
const clients: UnleashClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.stop();
  await proxy?.stop();
  proxy = undefined;
  await flagServer?.close();
  flagServer = undefined;
});

// At the root the upstream starts after the proxy (liveness before readiness); under a base path it
// is there first (the same answers, without waiting again for the SDK's retry after a refused fetch).
describe.each([
  { name: 'at the root', base: '', upstreamFirst: false },
  { name: `under ${BASE_PATH_VARIABLE}=/edge`, base: '/edge', upstreamFirst: true },
])('Edge’s Helm defaults, $name', ({ base, upstreamFirst }) => {
  test('pass Kubernetes probes, a keyless Prometheus scrape and a frontend SDK through /api/frontend', async () => {
    const upstreamPort = await freePort();
    const env: Record<string, string> = {
      UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}`,
      TOKENS: CLIENT_TOKEN,
      RUST_LOG: 'warn',
      LOG_FORMAT: 'json',
      ...(base ? { [BASE_PATH_VARIABLE]: base } : {}),
    };
    const backstage = `${base}/internal-backstage`;
    // Built while the proxy starts (its database takes seconds); nothing answers on its port until
    // startUpstream() makes it listen.
    const preparing = preparedTestFlagServer(EXAMPLE_FEATURES_FILE, {
      port: upstreamPort,
      featuresWatchInterval: 0,
      clientTokens: [CLIENT_TOKEN],
      frontendTokens: [FRONTEND],
    }).then((prepared) => (flagServer = prepared));
    const startUpstream = async (): Promise<void> => {
      await (await preparing).listen();
    };
    if (upstreamFirst) await startUpstream();
    let started: BuiltProxy;
    try {
      started = await startBuiltProxy(env, { livenessPath: `${backstage}/health` });
    } finally {
      await preparing;
    }
    proxy = started;
    const origin = proxy.origin;

    if (!upstreamFirst) {
      // the upstream is not there yet: alive, not ready (Kubernetes keeps the pod out of the Service)
      expect(await (await fetch(`${origin}${backstage}/health`)).json()).toEqual({ status: 'OK' });
      const notReady = await fetch(`${origin}${backstage}/ready`);
      expect(notReady.status).toBe(503);
      expect(await notReady.json()).toMatchObject({ status: 'NOT_READY' });
      await startUpstream();
    }
    await waitFor(async () => (await fetch(`${origin}${backstage}/ready`)).status === 200, 50_000);
    expect(await (await fetch(`${origin}${backstage}/ready`)).json()).toEqual({ status: 'READY' });

    const scrape = await fetch(`${origin}${backstage}/metrics`);
    expect(scrape.status).toBe(200);
    const text = await scrape.text();
    expect(text).toContain('flags_proxy_up 1');
    expect(text).toContain('flags_proxy_ready 1');

    const client = new UnleashClient({
      url: `${origin}${base}/api/frontend`,
      clientKey: FRONTEND,
      appName: 'helm-defaults',
      refreshInterval: 60,
      disableMetrics: true,
      storageProvider: new InMemoryStorageProvider(),
      context: { userId: 'alice' },
    });
    clients.push(client);
    await client.start();
    expect(client.isReady()).toBe(true);
    expect(client.isEnabled('beta-dashboard')).toBe(true);
    expect(client.isEnabled('legacy-export')).toBe(false);

    const madeUp = await fetch(`${origin}${base}/api/frontend`, {
      headers: { Authorization: '*:development.made-up-0123456789' },
    });
    expect(madeUp.status).toBe(401);
    expect(proxy.output()).not.toContain('helm-client-token');
  }, 120_000);
});
