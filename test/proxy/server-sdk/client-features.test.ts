import { once } from 'node:events';
import request from 'supertest';
import { InMemStorageProvider, Unleash } from 'unleash-client';
import type { ProxyApp } from '../../../src/proxy/app';
import { sampleFeatures } from '../../support/fixtures';
import { CLIENT_KEY, readyProxyFor, waitFor } from '../../support/proxy';
import { LoopbackServers } from '../../support/listen';
import { TestUpstream } from '../../support/upstream';
import { destroySdk } from '../../support/sdk';

const SERVER_TOKEN = 'server-sdk-token-1';

let upstream: TestUpstream;
const apps: ProxyApp[] = [];
const servers = new LoopbackServers();
const listen = (app: ProxyApp) => servers.listen(app);
const clients: Unleash[] = [];

async function proxy(options: Parameters<typeof readyProxyFor>[1] = {}): Promise<ProxyApp> {
  const app = await readyProxyFor(upstream, {
    expServerSideSdkConfig: { tokens: [SERVER_TOKEN] },
    ...options,
  });
  apps.push(app);
  return app;
}

function serverSdk(
  base: string,
  appName: string,
  extra: Partial<ConstructorParameters<typeof Unleash>[0]> = {},
) {
  const client = new Unleash({
    url: `${base}/proxy/`,
    appName,
    instanceId: `${appName}-1`,
    customHeaders: { Authorization: SERVER_TOKEN },
    refreshInterval: 100,
    metricsInterval: 100,
    storageProvider: new InMemStorageProvider(),
    skipInstanceCountWarning: true,
    ...extra,
  });
  client.on('error', () => undefined);
  client.on('warn', () => undefined);
  clients.push(client);
  return client;
}

beforeEach(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
});

afterEach(async () => {
  for (const c of clients.splice(0)) destroySdk(c);
  await servers.closeAll();
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await upstream.stop();
});

describe('GET /proxy/client/features', () => {
  test('a real unleash-client with a server-side token synchronises from the proxy and evaluates like the upstream', async () => {
    const app = await proxy();
    const client = serverSdk(await listen(app), 'server-app', { disableMetrics: true });
    await once(client, 'synchronized');
    expect(client.isEnabled('always-on')).toBe(true);
    expect(client.isEnabled('switched-off')).toBe(false);
    expect(client.isEnabled('for-alice', { userId: 'alice' })).toBe(true);
    expect(client.isEnabled('for-alice', { userId: 'carol' })).toBe(false);
    // segments travel with the definitions
    expect(client.isEnabled('beta-segment', { userId: 'beta-1' })).toBe(true);
    expect(client.isEnabled('beta-segment', { userId: 'someone' })).toBe(false);
    expect(client.getVariant('with-variants', { userId: 'u1' }).payload).toBeDefined();

    // later changes at the upstream reach the SDK through the proxy
    const changed = sampleFeatures();
    changed.features = changed.features.map((f) =>
      (f as { name: string }).name === 'switched-off' ? { ...(f as object), enabled: true } : f,
    );
    upstream.setFeatures(changed);
    await waitFor(() => client.isEnabled('switched-off'));
  });

  test("a real unleash-client's registration and usage metrics reach the upstream through the proxy", async () => {
    const app = await proxy({ metricsInterval: 100 });
    const client = serverSdk(await listen(app), 'metered-server-app');
    await once(client, 'synchronized');
    for (let i = 0; i < 3; i += 1) client.isEnabled('always-on');
    client.isEnabled('switched-off');

    const forwarded = () =>
      upstream
        .posted('/api/client/metrics')
        .map(
          (r) =>
            r.body as { appName: string; bucket: { toggles: Record<string, { yes: number; no: number }> } },
        )
        .filter((b) => b.appName === 'metered-server-app');
    const sum = (name: string) =>
      forwarded().reduce(
        (acc, b) => ({
          yes: acc.yes + (b.bucket.toggles[name]?.yes ?? 0),
          no: acc.no + (b.bucket.toggles[name]?.no ?? 0),
        }),
        { yes: 0, no: 0 },
      );
    await waitFor(() => sum('always-on').yes === 3 && sum('switched-off').no === 1);
    await waitFor(() =>
      upstream
        .posted('/api/client/register')
        .some(
          (r) => (r.body as { appName?: string; instanceId?: string }).instanceId === 'metered-server-app-1',
        ),
    );
  });

  test('another proxy can use this proxy as its upstream', async () => {
    const first = await proxy();
    const base = await listen(first);
    const second = await readyProxyFor(upstream, { flagsUrl: `${base}/proxy`, flagsApiToken: SERVER_TOKEN });
    apps.push(second);
    const res = await request(second).get('/proxy?userId=alice').set('Authorization', CLIENT_KEY);
    expect(res.status).toBe(200);
    expect(res.body.toggles.map((t: { name: string }) => t.name)).toContain('for-alice');
  });

  test('answers the client API shape with version 2, features and the segments they use', async () => {
    const app = await proxy();
    const res = await request(app).get('/proxy/client/features').set('Authorization', SERVER_TOKEN);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body.version).toBe(2);
    expect(res.body.features.map((f: { name: string }) => f.name)).toEqual(
      sampleFeatures()
        .features.map((f) => (f as { name: string }).name)
        .sort(),
    );
    expect(res.body.segments).toEqual([expect.objectContaining({ id: 1, name: 'beta-users' })]);
    const forAlice = res.body.features.find((f: { name: string }) => f.name === 'for-alice');
    expect(forAlice.strategies[0]).toMatchObject({
      name: 'userWithId',
      parameters: { userIds: 'alice,bob' },
    });
  });

  test('filters by the project and namePrefix parameters unleash-client sends', async () => {
    const app = await proxy();
    const byProject = await request(app)
      .get('/proxy/client/features?project=other')
      .set('Authorization', SERVER_TOKEN);
    expect(byProject.body.features.map((f: { name: string }) => f.name)).toEqual(['new-app-version']);
    expect(byProject.body.segments).toEqual([]);
    const byPrefix = await request(app)
      .get('/proxy/client/features?namePrefix=beta')
      .set('Authorization', SERVER_TOKEN);
    expect(byPrefix.body.features.map((f: { name: string }) => f.name)).toEqual(['beta-segment']);
    expect(byPrefix.body.segments).toHaveLength(1);
  });

  test('answers 304 when If-None-Match names the current ETag, and a new ETag after a change', async () => {
    const app = await proxy();
    const first = await request(app)
      .get('/proxy/client/features')
      .set('Authorization', `Bearer ${SERVER_TOKEN}`);
    expect(first.status).toBe(200);
    const etag = first.headers.etag;
    expect(etag).toMatch(/^W\/"/);
    const again = await request(app)
      .get('/proxy/client/features')
      .set('Authorization', SERVER_TOKEN)
      .set('If-None-Match', etag)
      .set('Cache-Control', 'no-cache');
    expect(again.status).toBe(304);
    expect(again.text).toBe('');

    const revision = app.features.revision;
    upstream.setFeatures({ ...sampleFeatures(), features: sampleFeatures().features.slice(1) });
    await waitFor(() => app.features.revision > revision);
    const after = await request(app)
      .get('/proxy/client/features')
      .set('Authorization', SERVER_TOKEN)
      .set('If-None-Match', etag);
    expect(after.status).toBe(200);
    expect(after.headers.etag).not.toBe(etag);
  });

  test('refuses a client key with 401', async () => {
    const app = await proxy();
    const res = await request(app).get('/proxy/client/features').set('Authorization', CLIENT_KEY);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'AuthenticationRequired',
      message: expect.any(String),
    });
    expect(res.body.message).not.toContain(CLIENT_KEY);
    expect((await request(app).get('/proxy/client/features')).status).toBe(401);
  });

  test('answers 401 naming EXP_SERVER_SIDE_SDK_CONFIG_TOKENS when no token is configured', async () => {
    const app = await proxy({ expServerSideSdkConfig: { tokens: [] } });
    const res = await request(app).get('/proxy/client/features').set('Authorization', SERVER_TOKEN);
    expect(res.status).toBe(401);
    expect(res.body.message).toContain('EXP_SERVER_SIDE_SDK_CONFIG_TOKENS');
  });

  test('a server-side token opens neither the evaluation nor the Prometheus endpoint', async () => {
    const app = await proxy();
    expect((await request(app).get('/proxy').set('Authorization', SERVER_TOKEN)).status).toBe(401);
    expect(
      (await request(app).get('/proxy/internal-backstage/prometheus').set('Authorization', SERVER_TOKEN))
        .status,
    ).toBe(401);
  });

  test('the usage-metric endpoints accept a server-side token as well as a client key', async () => {
    const app = await proxy();
    const now = Date.now();
    const body = { appName: 'a', instanceId: 'i', bucket: { start: now - 1000, stop: now, toggles: {} } };
    expect(
      (await request(app).post('/proxy/client/metrics').set('Authorization', SERVER_TOKEN).send(body)).status,
    ).toBe(202);
    expect(
      (await request(app).post('/proxy/client/metrics').set('Authorization', CLIENT_KEY).send(body)).status,
    ).toBe(202);
    expect(
      (await request(app).post('/proxy/client/metrics').set('Authorization', 'nope').send(body)).status,
    ).toBe(401);
  });
});
