import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { sampleFeatures } from '../../support/fixtures';
import { CLIENT_KEY, proxyFor, readyProxyFor, waitFor } from '../../support/proxy';
import { capturingLogger } from '../../support/logger';
import { TestUpstream } from '../../support/upstream';

const upstreams: TestUpstream[] = [];
const apps: ProxyApp[] = [];

async function upstreamWith(payload = sampleFeatures()): Promise<TestUpstream> {
  const upstream = await new TestUpstream(payload).start();
  upstreams.push(upstream);
  return upstream;
}

const track = (app: ProxyApp) => {
  apps.push(app);
  return app;
};

afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await Promise.all(upstreams.splice(0).map((u) => u.stop()));
});

const enabledNames = async (app: ProxyApp) =>
  (await request(app).get('/proxy').set('Authorization', CLIENT_KEY)).body.toggles.map(
    (t: { name: string }) => t.name,
  );

describe('readiness', () => {
  test('answers every request with 503 before the first synchronisation, and 200 after', async () => {
    const upstream = await upstreamWith();
    upstream.hang = true;
    const app = track(proxyFor(upstream));
    for (const req of [
      request(app).get('/proxy').set('Authorization', CLIENT_KEY),
      request(app).get('/proxy'),
      request(app).post('/proxy').send({}),
      request(app).get('/proxy/health'),
    ]) {
      const res = await req;
      expect(res.status).toBe(503);
      expect(res.body).toEqual({
        id: expect.any(String),
        name: 'NotReady',
        message: expect.stringContaining('not ready'),
      });
    }
    const preflight = await request(app)
      .options('/proxy')
      .set('Origin', 'https://a.example')
      .set('Access-Control-Request-Method', 'GET');
    expect(preflight.status).toBe(204);

    upstream.hang = false;
    await app.whenReady();
    const health = await request(app).get('/proxy/health');
    expect(health.status).toBe(200);
    expect(health.text).toBe('ok');
    expect(health.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(health.headers['content-length']).toBe('2');
    expect(health.headers['access-control-allow-origin']).toBe('*');
    expect((await request(app).get('/proxy').set('Authorization', CLIENT_KEY)).status).toBe(200);
  });

  test('sends the token, app name and instance id to the upstream and the configured filters', async () => {
    const upstream = await upstreamWith();
    track(
      await readyProxyFor(upstream, {
        flagsAppName: 'edge-1',
        flagsInstanceId: 'instance-7',
        namePrefix: 'with',
        tags: [{ name: 'team', value: 'web' }],
        projectName: 'default',
      }),
    );
    const fetch = upstream.featureRequests()[0];
    expect(fetch.headers.authorization).toBe(upstream.token);
    expect(fetch.headers['unleash-appname']).toBe('edge-1');
    expect(fetch.headers['unleash-instanceid']).toBe('instance-7');
    expect(fetch.query.get('namePrefix')).toBe('with');
    expect(fetch.query.getAll('tag')).toEqual(['team:web']);
    expect(fetch.query.get('project')).toBe('default');
  });

  test('with projectName, toggles of other projects are dropped locally whatever the upstream sends', async () => {
    const upstream = await upstreamWith();
    const app = track(await readyProxyFor(upstream, { projectName: 'other', enableAllEndpoint: true }));
    const res = await request(app).get('/proxy/all').set('Authorization', CLIENT_KEY);
    expect(res.body.toggles.map((t: { name: string }) => t.name)).toEqual(['new-app-version']);
  });
});

describe('upstream faults', () => {
  test('a rejected token is logged at error level naming the URL, never the token', async () => {
    const upstream = await upstreamWith();
    upstream.token = 'the-real-token';
    const logger = capturingLogger();
    const { lines } = logger;
    const app = track(proxyFor(upstream, { flagsApiToken: 'wrong-secret-token', logger }));
    await waitFor(() => lines.some((l) => l.level === 'error'));
    const error = lines.find((l) => l.level === 'error');
    expect(error?.msg).toContain(`${upstream.url}/client/features`);
    expect(error?.msg).toContain('401');
    expect(JSON.stringify(lines)).not.toContain('wrong-secret-token');
    expect((await request(app).get('/proxy/health')).status).toBe(503);
  });

  test('keeps retrying after 401 and recovers without a restart', async () => {
    const upstream = await upstreamWith();
    const app = track(await readyProxyFor(upstream, { refreshInterval: 50 }));
    upstream.fault = { status: 401 };
    const before = upstream.featureRequests().length;
    await waitFor(() => upstream.featureRequests().length >= before + 2, 8000);
    expect(await enabledNames(app)).toContain('always-on');
    upstream.fault = undefined;
    const changed = sampleFeatures();
    changed.features = changed.features.filter((f) => (f as { name: string }).name !== 'always-on');
    upstream.setFeatures(changed);
    await waitFor(async () => !(await enabledNames(app)).includes('always-on'), 10_000);
  });

  test.each([
    ['a 500', { status: 500, body: 'oops' }],
    ['non-JSON', { status: 200, body: '<html>not json</html>' }],
    [
      'a JSON answer that is no definitions document',
      { status: 200, body: JSON.stringify({ version: 2, toggles: [{ name: 'x' }] }) },
    ],
    ['features that are not a list', { status: 200, body: JSON.stringify({ version: 2, features: 'all' }) }],
    ['a 403', { status: 403 }],
  ])('keeps serving the last good definitions through %s', async (_what, fault) => {
    const upstream = await upstreamWith();
    const app = track(await readyProxyFor(upstream, { refreshInterval: 50 }));
    const good = await enabledNames(app);
    expect(good).toContain('always-on');
    upstream.fault = fault;
    const before = upstream.featureRequests().length;
    await waitFor(() => upstream.featureRequests().length >= before + 2, 8000);
    expect(await enabledNames(app)).toEqual(good);
    expect((await request(app).get('/proxy/health')).status).toBe(200);
  });

  test('a definitions change upstream reaches clients within a refresh', async () => {
    const upstream = await upstreamWith();
    const app = track(await readyProxyFor(upstream, { refreshInterval: 50 }));
    const first = await request(app).get('/proxy').set('Authorization', CLIENT_KEY);
    const changed = sampleFeatures();
    (changed.features[1] as { enabled: boolean }).enabled = true; // switched-off goes on
    upstream.setFeatures(changed);
    await waitFor(async () => (await enabledNames(app)).includes('switched-off'));
    const again = await request(app)
      .get('/proxy')
      .set('Authorization', CLIENT_KEY)
      .set('If-None-Match', first.headers['etag']);
    expect(again.status).toBe(200);
  });

  test('polls with If-None-Match so an idle upstream answers 304', async () => {
    const upstream = await upstreamWith();
    track(await readyProxyFor(upstream, { refreshInterval: 50 }));
    await waitFor(() => upstream.featureRequests().length >= 3);
    const [, second] = upstream.featureRequests();
    expect(second.headers['if-none-match']).toMatch(/^"[0-9a-f]+"$/);
  });
});
