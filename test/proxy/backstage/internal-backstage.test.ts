import { silentLogger } from '../../../src/common/logging/logger';
import type { ProxyApp } from '../../../src/proxy/app';
import { parseConfig } from '../../../src/proxy/config/parse-config';
import type { ProxyOptions } from '../../../src/proxy/config/types';
import { LoopbackServers } from '../../support/listen';
import { proxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

// Unleash Edge's internal backstage at {base}/internal-backstage, over real sockets against a
// loopback upstream that answers /edge/validate as Unleash does.

const UPSTREAM = '*:development.upstream-secret-0123456789abcdef';
const FRONTEND_KEY = '*:development.frontend-key-0123456789abcdef';
const SHOP_CLIENT = 'shop:development.shop-client-0123456789abcdef';
const VALIDATED_FRONTEND = '*:development.validated-frontend-0123456789abcdef';
const BACKEND = 'default:development.backend-typed-0123456789abcdef';
const PAYLOAD: FeaturesPayload = {
  version: 2,
  features: [
    { name: 'open-flag', enabled: true, project: 'default', strategies: [{ name: 'default' }] },
    { name: 'shop-flag', enabled: true, project: 'shop', strategies: [{ name: 'default' }] },
  ],
};

let upstream: TestUpstream;
const apps: ProxyApp[] = [];
const servers = new LoopbackServers();

beforeEach(async () => {
  upstream = await new TestUpstream(PAYLOAD, UPSTREAM).start();
  upstream.knownTokens.set(SHOP_CLIENT, { type: 'client', environment: 'development', projects: ['shop'] });
  upstream.knownTokens.set(BACKEND, { type: 'backend', environment: 'development', projects: ['default'] });
  upstream.knownTokens.set(VALIDATED_FRONTEND, {
    type: 'frontend',
    environment: 'development',
    projects: ['*'],
  });
});

afterEach(async () => {
  await servers.closeAll();
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await upstream.stop();
});

async function serve(options: ProxyOptions = {}): Promise<{ app: ProxyApp; url: string }> {
  const app = proxyFor(upstream, { flagsApiToken: UPSTREAM, clientKeys: [FRONTEND_KEY], ...options });
  apps.push(app);
  return { app, url: await servers.listen(app) };
}

const get = (url: string, headers: Record<string, string> = {}) => fetch(url, { headers });

test('health answers {"status":"OK"} and ready 503 with Edge’s NOT_READY body before the first synchronisation, READY after', async () => {
  upstream.fault = { status: 500 };
  const { url } = await serve();
  const health = await get(`${url}/internal-backstage/health`);
  expect(health.status).toBe(200);
  expect(await health.json()).toEqual({ status: 'OK' });
  const notReady = await get(`${url}/internal-backstage/ready`);
  expect(notReady.status).toBe(503);
  expect(notReady.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(await notReady.json()).toEqual({ error: expect.any(String), status: 'NOT_READY' });
  upstream.fault = undefined;
  await waitFor(async () => (await get(`${url}/internal-backstage/ready`)).status === 200);
  expect(await (await get(`${url}/internal-backstage/ready`)).json()).toEqual({ status: 'READY' });
});

test('metrics is the Prometheus exposition without a key, while the specification’s scrape path still wants one', async () => {
  const { app, url } = await serve();
  await app.whenReady();
  const scrape = await get(`${url}/internal-backstage/metrics`);
  expect(scrape.status).toBe(200);
  expect(scrape.headers.get('content-type')).toContain('text/plain');
  const text = await scrape.text();
  expect(text).toContain('flags_proxy_up 1');
  expect(text).toContain('flags_proxy_ready 1');
  expect((await get(`${url}/proxy/internal-backstage/prometheus`)).status).toBe(401);
  expect((await get(`${url}/proxy/health`)).status).toBe(200);
});

test('tokens lists the upstream token, the configured and the upstream-validated ones, every secret hidden alike whatever its length', async () => {
  const SHORT_KEY = '*:development.abc';
  const { app, url } = await serve({ clientKeys: [FRONTEND_KEY, SHORT_KEY] });
  await app.whenReady();
  // a key the upstream confirms, asked about once through the frontend API
  expect((await get(`${url}/api/frontend`, { Authorization: VALIDATED_FRONTEND })).status).toBe(200);
  expect(
    (await get(`${url}/api/frontend`, { Authorization: '*:development.made-up-000000000000' })).status,
  ).toBe(401);
  // a client token the upstream calls `backend` (Unleash 8, Edge), used on the client API
  expect((await get(`${url}/api/client/features`, { Authorization: BACKEND })).status).toBe(200);
  const res = await get(`${url}/internal-backstage/tokens`);
  expect(res.status).toBe(200);
  const text = await res.text();
  for (const secret of [UPSTREAM, FRONTEND_KEY, VALIDATED_FRONTEND, BACKEND])
    expect(text).not.toContain(secret.slice(secret.indexOf('.') + 1));
  expect(JSON.parse(text)).toEqual({
    tokenRefreshes: [
      {
        token: {
          token: '*:development.****',
          type: 'client',
          environment: 'development',
          projects: ['*'],
          status: 'Validated',
        },
        etag: null,
        next_refresh: null,
        last_refreshed: expect.any(String),
        last_feature_count: 2,
        last_check: expect.any(String),
        revision_id: null,
        failure_count: 0,
      },
    ],
    tokenValidationStatus: [
      // a long and a short secret look the same: nothing says which is weak
      {
        token: '*:development.****',
        type: 'frontend',
        environment: 'development',
        projects: ['*'],
        status: 'Trusted',
      },
      {
        token: '*:development.****',
        type: 'frontend',
        environment: 'development',
        projects: ['*'],
        status: 'Trusted',
      },
      {
        token: '*:development.****',
        type: 'frontend',
        environment: 'development',
        projects: ['*'],
        status: 'Validated',
      },
      {
        token: 'default:development.****',
        type: 'client',
        environment: 'development',
        projects: ['default'],
        status: 'Validated',
      },
    ],
    invalidTokenCount: 1,
  });
});

test('metricsbatch shows pending usage as app names and counts, without toggle names', async () => {
  const { app, url } = await serve();
  await app.whenReady();
  const now = new Date().toISOString();
  const post = await fetch(`${url}/api/frontend/client/metrics`, {
    method: 'POST',
    headers: { Authorization: FRONTEND_KEY, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      appName: 'web-shop',
      environment: 'development',
      bucket: {
        start: now,
        stop: now,
        toggles: { 'secret-launch': { yes: 3, no: 1 }, other: { yes: 2, no: 0 } },
      },
    }),
  });
  expect(post.status).toBe(202);
  const res = await get(`${url}/internal-backstage/metricsbatch`);
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(text).not.toContain('secret-launch');
  expect(JSON.parse(text)).toEqual({
    applications: [],
    metrics: [{ appName: 'web-shop', environment: 'development', toggles: 2, yes: 5, no: 1 }],
  });
});

test('features answers a client token with the definitions its projects may read; 401 without one, 403 to a frontend key', async () => {
  const { app, url } = await serve();
  await app.whenReady();
  const missing = await get(`${url}/internal-backstage/features`);
  expect(missing.status).toBe(401);
  expect(await missing.json()).toMatchObject({ name: 'AuthenticationRequired' });
  const frontend = await get(`${url}/internal-backstage/features`, { Authorization: FRONTEND_KEY });
  expect(frontend.status).toBe(403);
  expect(await frontend.json()).toMatchObject({ name: 'NoAccessError' });
  const madeUp = await get(`${url}/internal-backstage/features`, {
    Authorization: 'shop:development.made-up-client-000000',
  });
  expect(madeUp.status).toBe(401);
  const scoped = await get(`${url}/internal-backstage/features`, { Authorization: SHOP_CLIENT });
  expect(scoped.status).toBe(200);
  const body = (await scoped.json()) as Record<
    string,
    { version: number; features: Array<{ name: string }> }
  >;
  expect(Object.keys(body)).toEqual(['development']);
  expect(body.development.features.map((f) => f.name)).toEqual(['shop-flag']);
  const all = await get(`${url}/internal-backstage/features`, { Authorization: UPSTREAM });
  expect(all.status).toBe(200);
  const allBody = (await all.json()) as Record<string, { features: Array<{ name: string }> }>;
  expect(allBody.development.features.map((f) => f.name).sort()).toEqual(['open-flag', 'shop-flag']);
});

test('each DISABLE_*_ENDPOINT switch takes its endpoint away (404, and out of the OpenAPI description) while health and ready stay', async () => {
  const { app, url } = await serve({
    disableMetricsEndpoint: true,
    disableMetricsBatchEndpoint: true,
    disableTokensEndpoint: true,
    disableFeaturesEndpoint: true,
    disableStatusEndpoint: true,
    enableOAS: true,
  });
  await app.whenReady();
  const described = Object.keys(
    ((await (await get(`${url}/docs/openapi.json`)).json()) as { paths: Record<string, unknown> }).paths,
  ).filter((p) => p.startsWith('/internal-backstage/'));
  expect(described.sort()).toEqual(['/internal-backstage/health', '/internal-backstage/ready']);
  for (const path of ['metrics', 'metricsbatch', 'tokens', 'features', 'status', 'status.json'])
    expect([
      path,
      (await get(`${url}/internal-backstage/${path}`, { Authorization: UPSTREAM })).status,
    ]).toEqual([path, 404]);
  expect((await get(`${url}/internal-backstage/health`)).status).toBe(200);
  expect((await get(`${url}/internal-backstage/ready`)).status).toBe(200);
});

test('the switches are read from Edge’s variable names', () => {
  const base = {
    flagsUrl: upstream.url,
    flagsApiToken: UPSTREAM,
    clientKeys: [FRONTEND_KEY],
    logger: silentLogger,
  };
  expect(parseConfig(base, {})).toMatchObject({
    disableMetricsEndpoint: false,
    disableMetricsBatchEndpoint: false,
    disableTokensEndpoint: false,
    disableFeaturesEndpoint: false,
    disableStatusEndpoint: false,
  });
  const switched = parseConfig(base, {
    DISABLE_METRICS_ENDPOINT: 'true',
    DISABLE_METRICS_BATCH_ENDPOINT: 'true',
    DISABLE_TOKENS_ENDPOINT: 'true',
    DISABLE_FEATURES_ENDPOINT: 'true',
    DISABLE_STATUS_ENDPOINT: 'true',
  });
  expect(switched).toMatchObject({
    disableMetricsEndpoint: true,
    disableMetricsBatchEndpoint: true,
    disableTokensEndpoint: true,
    disableFeaturesEndpoint: true,
    disableStatusEndpoint: true,
  });
});

test('the backstage is served under the base path, and not at the root then', async () => {
  const { app, url } = await serve({ proxyBasePath: 'edge/base' });
  await app.whenReady();
  expect((await get(`${url}/edge/base/internal-backstage/health`)).status).toBe(200);
  expect((await get(`${url}/edge/base/internal-backstage/ready`)).status).toBe(200);
  expect((await get(`${url}/edge/base/internal-backstage/metrics`)).status).toBe(200);
  expect((await get(`${url}/internal-backstage/health`)).status).toBe(404);
});
