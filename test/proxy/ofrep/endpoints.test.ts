import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { streamToken } from '../../../src/proxy/ofrep/auth';
import { CLIENT_KEY, proxyFor, readyProxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';
import { ofrepFeatures } from './fixtures';

let upstream: TestUpstream;
const apps: ProxyApp[] = [];

async function proxy(options: Parameters<typeof readyProxyFor>[1] = {}): Promise<ProxyApp> {
  const app = await readyProxyFor(upstream, options);
  apps.push(app);
  return app;
}

const BULK = '/ofrep/v1/evaluate/flags';
const one = (key: string) => `/ofrep/v1/evaluate/flags/${encodeURIComponent(key)}`;

beforeAll(async () => {
  upstream = await new TestUpstream(ofrepFeatures()).start();
});

afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await upstream.stop();
});

describe('POST /ofrep/v1/evaluate/flags/{key}', () => {
  test('answers a boolean toggle with its value, reason, variant and impression metadata', async () => {
    const app = await proxy();
    const res = await request(app)
      .post(one('for-alice'))
      .set('Authorization', `Bearer ${CLIENT_KEY}`)
      .send({ context: { targetingKey: 'alice' } });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      key: 'for-alice',
      value: true,
      reason: 'TARGETING_MATCH',
      variant: 'disabled',
      metadata: { impressionData: false },
    });
  });

  test('maps targetingKey to userId and answers DEFAULT when no strategy matched', async () => {
    const app = await proxy();
    const res = await request(app)
      .post(one('for-alice'))
      .set('X-API-Key', CLIENT_KEY)
      .send({ context: { targetingKey: 'carol', userId: 'alice' } });
    expect(res.body).toMatchObject({ key: 'for-alice', value: false, reason: 'DEFAULT' });
  });

  test.each([
    ['always-on', {}, 'STATIC', true],
    ['plan-pro', { plan: 'pro' }, 'TARGETING_MATCH', true],
    ['beta-segment', { targetingKey: 'beta-1' }, 'TARGETING_MATCH', true],
    ['with-variants', { targetingKey: 'u1' }, 'SPLIT', true],
    ['child-of-always-on', {}, 'STATIC', true],
  ])('gives %s the reason of the strategy that decided (%j → %s)', async (key, context, reason, value) => {
    const app = await proxy();
    const res = await request(app).post(one(key)).set('Authorization', CLIENT_KEY).send({ context });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ key, reason, value });
  });

  test('answers SPLIT for a rollout below 100% whichever way the user falls', async () => {
    const app = await proxy();
    const seen = new Set<boolean>();
    for (let i = 0; i < 20; i++) {
      const res = await request(app)
        .post(one('half-rollout'))
        .set('Authorization', CLIENT_KEY)
        .send({ context: { targetingKey: `user-${i}` } });
      if (res.body.value === true) expect(res.body.reason).toBe('SPLIT');
      else expect(res.body.reason).toBe('DEFAULT');
      seen.add(res.body.value as boolean);
    }
    expect([...seen].sort()).toEqual([false, true]);
  });

  test('answers DISABLED without a value for a toggle switched off in the environment', async () => {
    const app = await proxy();
    const res = await request(app).post(one('switched-off')).set('Authorization', CLIENT_KEY).send({});
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      key: 'switched-off',
      reason: 'DISABLED',
      variant: 'disabled',
      metadata: { impressionData: false },
    });
  });

  test('types a toggle by its variant payloads: string and csv, number, json', async () => {
    const app = await proxy();
    const post = (key: string, context: object) =>
      request(app).post(one(key)).set('Authorization', CLIENT_KEY).send({ context });
    expect((await post('banner-text', {})).body).toMatchObject({ value: 'Hello!', variant: 'hello' });
    expect((await post('max-items', { plan: 'pro' })).body).toMatchObject({
      value: 10,
      variant: 'ten',
      reason: 'TARGETING_MATCH',
    });
    const theme = (await post('theme-config', {})).body;
    expect(theme).toMatchObject({ value: { mode: 'dark', contrast: 2 }, variant: 'dark', reason: 'STATIC' });
  });

  test('leaves out the value of a typed toggle that no strategy enabled, so the code default applies', async () => {
    const app = await proxy();
    const res = await request(app)
      .post(one('max-items'))
      .set('Authorization', CLIENT_KEY)
      .send({ context: { plan: 'free' } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      key: 'max-items',
      reason: 'DEFAULT',
      variant: 'disabled',
      metadata: { impressionData: false },
    });
  });

  test('carries impressionData in metadata', async () => {
    const app = await proxy();
    const res = await request(app).post(one('with-variants')).set('Authorization', CLIENT_KEY).send({});
    expect(res.body.metadata).toEqual({ impressionData: true });
  });

  test('answers a payload that does not parse as its type with PARSE_ERROR', async () => {
    const app = await proxy();
    const res = await request(app).post(one('broken-number')).set('Authorization', CLIENT_KEY).send({});
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ key: 'broken-number', errorCode: 'PARSE_ERROR' });
  });

  test('answers an unknown flag with 404 FLAG_NOT_FOUND', async () => {
    const app = await proxy();
    const res = await request(app).post(one('nope')).set('Authorization', CLIENT_KEY).send({});
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      key: 'nope',
      errorCode: 'FLAG_NOT_FOUND',
      errorDetails: 'Flag "nope" was not found',
    });
  });

  test('uses the configured environment, not the client one', async () => {
    const app = await proxy({ environment: 'production' });
    const res = await request(app)
      .post(one('prod-only'))
      .set('Authorization', CLIENT_KEY)
      .send({ context: { environment: 'dev' } });
    expect(res.body).toMatchObject({ value: true, reason: 'TARGETING_MATCH' });
  });

  test('fills remoteAddress from the socket, never from the client', async () => {
    const app = await proxy();
    const res = await request(app)
      .post(one('office-ip'))
      .set('Authorization', CLIENT_KEY)
      .send({ context: { remoteAddress: '10.1.2.3' } });
    expect(res.body).toMatchObject({ value: false, reason: 'DEFAULT' });
  });

  test('runs custom enrichers on the context', async () => {
    const app = await proxy({
      expCustomEnrichers: [(context) => ({ ...context, properties: { ...context.properties, plan: 'pro' } })],
    });
    const res = await request(app).post(one('plan-pro')).set('Authorization', CLIENT_KEY).send({});
    expect(res.body).toMatchObject({ value: true, reason: 'TARGETING_MATCH' });
  });

  test('counts usage like /proxy does', async () => {
    const app = await proxy();
    await request(app).post(one('always-on')).set('Authorization', CLIENT_KEY).send({});
    await request(app).post(one('always-on')).set('Authorization', CLIENT_KEY).send({});
    await app.close();
    const buckets = upstream
      .posted('/api/client/metrics')
      .map((r) => (r.body as { bucket: { toggles: Record<string, { yes: number; no: number }> } }).bucket);
    const yes = buckets.reduce((n, b) => n + (b.toggles['always-on']?.yes ?? 0), 0);
    expect(yes).toBeGreaterThanOrEqual(2);
  });
});

describe('POST /ofrep/v1/evaluate/flags (bulk)', () => {
  test('lists every toggle sorted by name and announces the change stream', async () => {
    const app = await proxy();
    const res = await request(app)
      .post(BULK)
      .set('Authorization', CLIENT_KEY)
      .send({ context: { targetingKey: 'alice' } });
    expect(res.status).toBe(200);
    const keys = (res.body.flags as Array<{ key: string }>).map((f) => f.key);
    expect(keys).toEqual(app.features.toggles().map((t) => t.name));
    expect(keys).toContain('switched-off');
    expect(res.body.flags).toContainEqual({
      key: 'for-alice',
      value: true,
      reason: 'TARGETING_MATCH',
      variant: 'disabled',
      metadata: { impressionData: false },
    });
    const [stream] = res.body.eventStreams as Array<{
      type: string;
      url: string;
      inactivityDelaySec: number;
    }>;
    expect(stream.type).toBe('sse');
    expect(stream.inactivityDelaySec).toBe(120);
    const url = new URL(stream.url);
    expect(url.pathname).toBe('/ofrep/v1/flag-changes');
    expect(url.searchParams.get('token')).toBe(streamToken(CLIENT_KEY));
    expect(stream.url).not.toContain(CLIENT_KEY);
  });

  test('has an ETag and answers 304 to a matching If-None-Match, also with no-cache', async () => {
    const app = await proxy();
    const first = await request(app).post(BULK).set('Authorization', CLIENT_KEY).send({ context: {} });
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^W\/"/);
    const again = await request(app)
      .post(`${BULK}?flagConfigEtag=x&flagConfigLastModified=1771622898`)
      .set('Authorization', CLIENT_KEY)
      .set('If-None-Match', etag)
      .set('Cache-Control', 'no-cache')
      .send({ context: {} });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    const other = await request(app)
      .post(BULK)
      .set('Authorization', CLIENT_KEY)
      .set('If-None-Match', etag)
      .send({ context: { targetingKey: 'alice' } });
    expect(other.status).toBe(200);
  });

  test('answers a pure revalidation 304 from a validator derived before evaluating: the same on every replica, not counted, new with new definitions', async () => {
    const pure = (forAlice: boolean): FeaturesPayload => ({
      version: 2,
      features: [
        {
          name: 'for-alice',
          enabled: forAlice,
          strategies: [{ name: 'userWithId', parameters: { userIds: 'alice' } }],
        },
        {
          name: 'theme',
          enabled: true,
          strategies: [
            { name: 'default', constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }] },
          ],
          variants: [
            { name: 'dark', weight: 1000, stickiness: 'default', payload: { type: 'string', value: 'dark' } },
          ],
        },
      ],
    });
    const own = await new TestUpstream(pure(true)).start();
    try {
      const replicas = [
        await readyProxyFor(own, { refreshInterval: 50 }),
        await readyProxyFor(own, { refreshInterval: 50 }),
      ];
      const [app, replica] = replicas;
      const body = { context: { targetingKey: 'alice', plan: 'pro' } };
      const ask = (target: ProxyApp, etag?: string) => {
        const req = request(target).post(BULK).set('Authorization', CLIENT_KEY);
        return (etag ? req.set('If-None-Match', etag) : req).send(body);
      };
      const first = await ask(app);
      expect(first.status).toBe(200);
      const etag = String(first.headers.etag);
      expect(etag).toMatch(/^W\/"d-/);
      expect((await ask(replica)).headers.etag).toBe(etag);
      for (const target of replicas) {
        const again = await ask(target, etag);
        expect(again.status).toBe(304);
        expect(again.headers.etag).toBe(etag);
      }
      // the validator of the toggle list for the same context is another one
      const list = await request(app).post('/proxy/all').set('Authorization', CLIENT_KEY).send(body);
      expect(list.headers.etag).not.toBe(etag);

      const revision = app.features.revision;
      own.setFeatures(pure(false));
      await waitFor(() => app.features.revision !== revision);
      const changed = await ask(app, etag);
      expect(changed.status).toBe(200);
      expect(changed.headers.etag).not.toBe(etag);
      expect((changed.body as { flags: { key: string; value?: unknown }[] }).flags).toContainEqual(
        expect.objectContaining({ key: 'for-alice', reason: 'DISABLED' }),
      );
      await Promise.all(replicas.map((r) => r.close()));
      // usage: the 200s evaluated (and counted) each flag; the 304s evaluated nothing
      const counted = own
        .posted('/api/client/metrics')
        .map((r) => (r.body as { bucket: { toggles: Record<string, { yes: number; no: number }> } }).bucket)
        .reduce((n, b) => n + (b.toggles.theme?.yes ?? 0) + (b.toggles.theme?.no ?? 0), 0);
      expect(counted).toBe(3);
    } finally {
      await own.stop();
    }
  });

  test('puts the stream on the host the client used, behind a base path too', async () => {
    const app = await proxy({ proxyBasePath: '/edge' });
    const res = await request(app)
      .post(`/edge${BULK}`)
      .set('Host', 'flags.example.com:8443')
      .set('Authorization', CLIENT_KEY)
      .send({});
    expect(res.status).toBe(200);
    expect(res.body.eventStreams[0].url).toMatch(
      /^http:\/\/flags\.example\.com:8443\/edge\/ofrep\/v1\/flag-changes\?/,
    );
  });
});

describe('OFREP bad input', () => {
  test.each([BULK, one('always-on')])(
    '%s: 401 without a body when the key is missing or wrong',
    async (path) => {
      const app = await proxy();
      const missing = await request(app).post(path).send({});
      expect(missing.status).toBe(401);
      expect(missing.text).toBe('');
      const wrong = await request(app).post(path).set('Authorization', 'Bearer nope').send({});
      expect(wrong.status).toBe(401);
      expect(wrong.text).toBe('');
    },
  );

  test('403 without a body for a server-side SDK token', async () => {
    const app = await proxy({ expServerSideSdkConfig: { tokens: ['server-token'] } });
    const res = await request(app).post(BULK).set('X-API-Key', 'server-token').send({});
    expect(res.status).toBe(403);
    expect(res.text).toBe('');
  });

  test('accepts the key in a custom header name', async () => {
    const app = await proxy({ clientKeysHeaderName: 'x-client-key' });
    const res = await request(app).post(BULK).set('X-Client-Key', CLIENT_KEY).send({});
    expect(res.status).toBe(200);
  });

  test('400 PARSE_ERROR for a body that is not JSON, with the key of a single flag', async () => {
    const app = await proxy();
    const res = await request(app)
      .post(one('always-on'))
      .set('Authorization', CLIENT_KEY)
      .set('Content-Type', 'application/json')
      .send('{"context":');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ key: 'always-on', errorCode: 'PARSE_ERROR' });
    expect(typeof res.body.errorDetails).toBe('string');
  });

  test('400 PARSE_ERROR for a JSON body that is not an object', async () => {
    const app = await proxy();
    const res = await request(app).post(BULK).set('Authorization', CLIENT_KEY).send([1, 2]);
    expect(res.status).toBe(400);
    expect(res.body.errorCode).toBe('PARSE_ERROR');
    expect(res.body.key).toBeUndefined();
  });

  test.each([
    ['a context that is not an object', { context: 'alice' }, 'context'],
    ['nested objects in properties', { context: { properties: { a: { b: 1 } } } }, 'context.properties.a'],
    ['a nested object at the root', { context: { address: { city: 'Oslo' } } }, 'context.address'],
  ])('400 INVALID_CONTEXT for %s, naming the field', async (_what, body, field) => {
    const app = await proxy();
    const res = await request(app).post(BULK).set('Authorization', CLIENT_KEY).send(body);
    expect(res.status).toBe(400);
    expect(res.body.errorCode).toBe('INVALID_CONTEXT');
    expect(res.body.errorDetails).toContain(field);
  });

  test('413 before parsing for a body over the size limit', async () => {
    const app = await proxy({ maxBodySize: 1000 });
    const res = await request(app)
      .post(BULK)
      .set('Authorization', CLIENT_KEY)
      .set('Content-Type', 'application/json')
      .send(`{"context":{"x":"${'a'.repeat(5000)}"}`);
    expect(res.status).toBe(413);
    expect(res.body.name).toBe('PayloadTooLarge');
  });

  test('a request without a valid key never gets its body parsed', async () => {
    const app = await proxy();
    const res = await request(app).post(BULK).set('Content-Type', 'application/json').send('not json at all');
    expect(res.status).toBe(401);
  });

  test('404 for unknown paths under /ofrep', async () => {
    const app = await proxy();
    for (const path of [
      '/ofrep',
      '/ofrep/v1/configuration',
      '/ofrep/v2/evaluate/flags',
      '/ofrep/v1/evaluate/flags/a/b',
    ]) {
      const res = await request(app).post(path).set('Authorization', CLIENT_KEY).send({});
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
      expect(res.body.name).toBe('NotFoundError');
    }
  });

  test('503 before the first synchronisation', async () => {
    const hung = await new TestUpstream(ofrepFeatures()).start();
    hung.hang = true;
    const app = proxyFor(hung);
    apps.push(app);
    const res = await request(app).post(BULK).set('Authorization', CLIENT_KEY).send({});
    expect(res.status).toBe(503);
    await app.close();
    await hung.stop();
  });

  test('answers CORS preflights without a key and sets CORS headers on answers', async () => {
    const app = await proxy();
    const preflight = await request(app)
      .options(BULK)
      .set('Origin', 'https://app.example.com')
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'authorization,content-type,if-none-match');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-headers']).toContain('if-none-match');
    const res = await request(app)
      .post(BULK)
      .set('Origin', 'https://app.example.com')
      .set('Authorization', CLIENT_KEY)
      .send({});
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toContain('ETag');
  });
});
