import request from 'supertest';
import type { ProxyApp } from '../../src/proxy/app';
import { sampleFeatures } from '../support/fixtures';
import { capturingLogger } from '../support/logger';
import { CLIENT_KEY, proxyFor, readyProxyFor, waitFor } from '../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../support/upstream';
import { LoopbackServers } from '../support/listen';
import type { ClientFeaturesResponse } from 'unleash-client';

const upstreams: TestUpstream[] = [];
const apps: ProxyApp[] = [];
const servers = new LoopbackServers();

async function upstreamWith(payload: FeaturesPayload = sampleFeatures()): Promise<TestUpstream> {
  const upstream = await new TestUpstream(payload).start();
  upstreams.push(upstream);
  return upstream;
}

const track = (app: ProxyApp) => {
  apps.push(app);
  return app;
};

afterEach(async () => {
  await servers.closeAll();
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await Promise.all(upstreams.splice(0).map((u) => u.stop()));
});

type Json = Record<string, unknown>;

/** The sample definitions with one more toggle, given as raw JSON (it may be malformed on purpose). */
function sampleWith(extra: Json): FeaturesPayload {
  const payload = sampleFeatures();
  payload.features.push(extra);
  return payload;
}

const DEPENDENCIES_AS_OBJECT: Json = {
  name: 'child',
  enabled: true,
  strategies: [{ name: 'default', parameters: {} }],
  dependencies: { feature: 'always-on' },
};

const OVERRIDE_WITH_NULL: Json = {
  name: 'overridden',
  enabled: true,
  strategies: [{ name: 'default', parameters: {} }],
  variants: [{ name: 'a', weight: 1000, stickiness: 'default', overrides: [null] }],
};

const names = (body: { toggles: { name: string }[] }) => body.toggles.map((t) => t.name);

/** GET and POST /proxy over a real socket. */
async function proxyAnswers(app: ProxyApp) {
  const url = await servers.listen(app);
  const get = await fetch(`${url}/proxy?userId=u1`, { headers: { authorization: CLIENT_KEY } });
  const post = await fetch(`${url}/proxy`, {
    method: 'POST',
    headers: { authorization: CLIENT_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ context: { userId: 'u1' } }),
  });
  return {
    get: { status: get.status, body: await get.text() },
    post: { status: post.status, body: await post.text() },
  };
}

describe('malformed toggles from the upstream', () => {
  test.each([
    ['dependencies given as an object', DEPENDENCIES_AS_OBJECT, 'child', 'dependencies'],
    ['a variant override that is null', OVERRIDE_WITH_NULL, 'overridden', 'variants[0].overrides[0]'],
  ])(
    'a first answer with %s keeps the proxy not ready, logs the toggle and the field, and counts it',
    async (_what, toggle, name, path) => {
      const upstream = await upstreamWith(sampleWith(toggle));
      const logger = capturingLogger();
      const app = track(proxyFor(upstream, { logger }));
      await waitFor(() => logger.lines.some((l) => l.level === 'error'));
      const error = logger.lines.find((l) => l.level === 'error');
      expect(error?.msg).toContain(`"${name}"`);
      expect(error?.msg).toContain(path);
      expect(JSON.stringify(logger.lines)).not.toContain(upstream.token);
      const url = await servers.listen(app);
      expect((await fetch(`${url}/proxy`, { headers: { authorization: CLIENT_KEY } })).status).toBe(503);
      expect((await fetch(`${url}/proxy/health`)).status).toBe(503);

      upstream.setFeatures(sampleFeatures());
      await app.whenReady();
      const metrics = await fetch(`${url}/proxy/internal-backstage/prometheus`, {
        headers: { authorization: CLIENT_KEY },
      });
      expect(await metrics.text()).toMatch(/^flags_proxy_upstream_definitions_refused_total [1-9]\d*$/m);
    },
  );

  test.each([
    ['dependencies given as an object', DEPENDENCIES_AS_OBJECT],
    ['a variant override that is null', OVERRIDE_WITH_NULL],
  ])(
    'an update with %s is refused as a whole: GET and POST /proxy keep answering the last good definitions',
    async (_what, toggle) => {
      const upstream = await upstreamWith();
      const app = track(await readyProxyFor(upstream, { refreshInterval: 50 }));
      const before = await proxyAnswers(app);
      expect(before.get.status).toBe(200);
      expect(before.post.status).toBe(200);

      const changed = sampleWith(toggle);
      (changed.features[1] as Json).enabled = true; // a valid change in the same answer is refused too
      upstream.setFeatures(changed);
      const polls = upstream.featureRequests().length;
      await waitFor(() => upstream.featureRequests().length >= polls + 3, 8000);

      const after = await proxyAnswers(app);
      expect(after).toEqual(before);
      expect(names(JSON.parse(after.get.body) as { toggles: { name: string }[] })).not.toContain(
        'switched-off',
      );
      const health = await request(app).get('/proxy/health');
      expect(health.status).toBe(200);
    },
  );
});

const refusedCount = (app: ProxyApp) => app.features.stats.definitionsRefused;

describe('streaming and delta answers', () => {
  test('an upstream asking for streaming (fetch-mode header) is polled for full answers all the same', async () => {
    const upstream = await upstreamWith();
    upstream.featureHeaders = { 'fetch-mode': 'streaming' };
    const app = track(await readyProxyFor(upstream, { refreshInterval: 50 }));
    expect((await proxyAnswers(app)).get.body).toContain('"always-on"');

    const changed = sampleFeatures();
    (changed.features[1] as Json).enabled = true; // switched-off goes on
    upstream.setFeatures(changed);
    await waitFor(async () => (await proxyAnswers(app)).get.body.includes('"switched-off"'));
    // an answer with the header that is malformed is refused like any other
    upstream.setFeatures(sampleWith(OVERRIDE_WITH_NULL));
    await waitFor(() => refusedCount(app) > 0);
    expect((await proxyAnswers(app)).get.body).toContain('"switched-off"');
    expect(
      upstream.requests.filter((r) => r.path !== '/api/client/features').map((r) => r.path),
    ).not.toContain('/api/client/streaming');
  });

  test('a delta answer is refused and the last good definitions stay in use', async () => {
    const upstream = await upstreamWith();
    const app = track(await readyProxyFor(upstream, { refreshInterval: 50 }));
    const before = await proxyAnswers(app);
    upstream.fault = {
      status: 200,
      body: JSON.stringify({
        events: [
          { type: 'feature-updated', eventId: 2, feature: OVERRIDE_WITH_NULL },
          { type: 'feature-removed', eventId: 3, featureName: 'always-on', project: 'default' },
        ],
      }),
    };
    await waitFor(() => refusedCount(app) >= 2);
    expect(await proxyAnswers(app)).toEqual(before);
  });
});

describe('definitions from other sources', () => {
  test('a malformed stored backup does not make the proxy ready', async () => {
    const upstream = await upstreamWith();
    upstream.fault = { status: 503 };
    const stored = sampleWith(DEPENDENCIES_AS_OBJECT);
    const gets: string[] = [];
    const storageProvider = {
      set: () => Promise.resolve(),
      get: (key: string) => {
        gets.push(key);
        return Promise.resolve(stored as ClientFeaturesResponse);
      },
    };
    const logger = capturingLogger();
    const app = track(proxyFor(upstream, { storageProvider, logger }));
    await waitFor(() => refusedCount(app) > 0);
    expect(gets.length).toBeGreaterThan(0);
    expect(logger.lines.find((l) => l.level === 'error')?.msg).toMatch(
      /stored backup: toggle "child" at dependencies/,
    );
    expect((await request(app).get('/proxy/health')).status).toBe(503);
    upstream.fault = undefined;
    await app.whenReady();
  });
});
