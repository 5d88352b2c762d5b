import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { sampleFeatures } from '../../support/fixtures';
import { CLIENT_KEY, readyProxyFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

let upstream: TestUpstream;
const apps: ProxyApp[] = [];

async function proxy(options: Parameters<typeof readyProxyFor>[1] = {}): Promise<ProxyApp> {
  const app = await readyProxyFor(upstream, options);
  apps.push(app);
  return app;
}

const names = (body: { toggles: Array<{ name: string }> }) => body.toggles.map((t) => t.name);

beforeAll(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
});

afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await upstream.stop();
});

describe('GET /proxy', () => {
  test('returns only the toggles enabled for the query context, sorted by name', async () => {
    const app = await proxy();
    const res = await request(app)
      .get('/proxy?userId=alice&properties[plan]=pro')
      .set('Authorization', CLIENT_KEY);
    expect(res.status).toBe(200);
    expect(names(res.body)).toEqual([
      'always-on',
      'for-alice',
      'plan-pro',
      'user-named-disabled',
      'with-variants',
    ]);
    expect(res.body.toggles.every((t: { enabled: boolean }) => t.enabled)).toBe(true);
    expect(res.body.toggles[0]).toEqual({
      name: 'always-on',
      enabled: true,
      impressionData: false,
      variant: { name: 'disabled', enabled: false },
    });
  });

  test('never returns strategies, constraints or other configuration', async () => {
    const app = await proxy();
    const res = await request(app).get('/proxy').set('Authorization', CLIENT_KEY);
    const text = JSON.stringify(res.body);
    expect(text).not.toMatch(/strateg|constraint|segment|weight|stickiness/);
    for (const toggle of res.body.toggles)
      expect(Object.keys(toggle).sort()).toEqual(['enabled', 'impressionData', 'name', 'variant']);
  });

  test('maps properties[x] and unknown parameters to properties, root fields to the root', async () => {
    const app = await proxy();
    const viaBracket = await request(app).get('/proxy?properties[plan]=pro').set('Authorization', CLIENT_KEY);
    const viaPlain = await request(app).get('/proxy?plan=pro').set('Authorization', CLIENT_KEY);
    const other = await request(app).get('/proxy?plan=free').set('Authorization', CLIENT_KEY);
    expect(names(viaBracket.body)).toContain('plan-pro');
    expect(names(viaPlain.body)).toContain('plan-pro');
    expect(names(other.body)).not.toContain('plan-pro');
  });

  test('answers 400 naming a query parameter given twice', async () => {
    const app = await proxy();
    const res = await request(app).get('/proxy?userId=a&userId=b').set('Authorization', CLIENT_KEY);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'ValidationError',
      message: expect.stringContaining('"userId"'),
    });
  });

  test('returns a toggle whose user-defined variant is named "disabled" with the variant enabled', async () => {
    const app = await proxy();
    const res = await request(app).get('/proxy').set('Authorization', CLIENT_KEY);
    const toggle = res.body.toggles.find((t: { name: string }) => t.name === 'user-named-disabled');
    expect(toggle.variant).toEqual({ name: 'disabled', enabled: true });
  });

  test('returns variant payloads as strings, json payloads JSON-encoded', async () => {
    const app = await proxy();
    const seen = new Map<string, unknown>();
    for (let i = 0; i < 30 && seen.size < 2; i++) {
      const res = await request(app).get(`/proxy?userId=user-${i}`).set('Authorization', CLIENT_KEY);
      const toggle = res.body.toggles.find((t: { name: string }) => t.name === 'with-variants');
      expect(toggle.impressionData).toBe(true);
      seen.set(toggle.variant.name, toggle.variant);
    }
    expect(seen.get('blue')).toEqual({
      name: 'blue',
      enabled: true,
      payload: { type: 'string', value: 'blue-theme' },
    });
    expect(seen.get('config')).toEqual({
      name: 'config',
      enabled: true,
      payload: { type: 'json', value: '{"color":"red","size":3}' },
    });
  });

  test('evaluates segments', async () => {
    const app = await proxy();
    const beta = await request(app).get('/proxy?userId=beta-1').set('Authorization', CLIENT_KEY);
    const other = await request(app).get('/proxy?userId=carol').set('Authorization', CLIENT_KEY);
    expect(names(beta.body)).toContain('beta-segment');
    expect(names(other.body)).not.toContain('beta-segment');
  });

  test('carries the response headers of spec 4.2 with a weak ETag', async () => {
    const app = await proxy();
    const res = await request(app).get('/proxy').set('Authorization', CLIENT_KEY);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-expose-headers']).toBe('ETag');
    expect(res.headers['cache-control']).toBe('public, max-age=2');
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['etag']).toMatch(/^W\/"[0-9a-f]+-[\w-]+"$/);
    // spec 4.2 shows `Vary: Accept-Encoding`; the key's header is named too, so a shared cache
    // never hands one key's answer to another key (README, "Responses")
    expect(res.headers['vary']).toBe('Accept-Encoding, Authorization');
  });

  test('answers 304 without a body to a matching If-None-Match, also with Cache-Control: no-cache', async () => {
    const app = await proxy();
    const first = await request(app).get('/proxy?userId=alice').set('Authorization', CLIENT_KEY);
    const etag = first.headers['etag'];
    const again = await request(app)
      .get('/proxy?userId=alice')
      .set('Authorization', CLIENT_KEY)
      .set('If-None-Match', etag)
      .set('Cache-Control', 'no-cache');
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers['etag']).toBe(etag);
    const otherContext = await request(app)
      .get('/proxy?userId=bob-2')
      .set('Authorization', CLIENT_KEY)
      .set('If-None-Match', etag);
    expect(otherContext.status).toBe(200);
  });

  test('compresses bodies of 1 KB and more when the client accepts it', async () => {
    const app = await proxy({ enableAllEndpoint: true });
    const res = await request(app)
      .get('/proxy/all')
      .set('Authorization', CLIENT_KEY)
      .set('Accept-Encoding', 'gzip');
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.body.toggles).toHaveLength(10);
  });

  test('fills remoteAddress from the socket and ignores a client-sent one', async () => {
    const app = await proxy();
    const res = await request(app).get('/proxy?remoteAddress=10.1.2.3').set('Authorization', CLIENT_KEY);
    expect(names(res.body)).not.toContain('office-ip');
  });

  test('with trustProxy the address comes from X-Forwarded-For', async () => {
    const trusting = await proxy({ trustProxy: true });
    const trusted = await request(trusting)
      .get('/proxy')
      .set('Authorization', CLIENT_KEY)
      .set('X-Forwarded-For', '10.1.2.3');
    expect(names(trusted.body)).toContain('office-ip');
    const distrusting = await proxy({ trustProxy: false });
    const untrusted = await request(distrusting)
      .get('/proxy')
      .set('Authorization', CLIENT_KEY)
      .set('X-Forwarded-For', '10.1.2.3');
    expect(names(untrusted.body)).not.toContain('office-ip');
  });
});

describe('environment', () => {
  test('uses the client environment when none is configured', async () => {
    const app = await proxy();
    const res = await request(app).get('/proxy?environment=production').set('Authorization', CLIENT_KEY);
    expect(names(res.body)).toContain('prod-only');
  });

  test('the configured environment wins over the client', async () => {
    const app = await proxy({ environment: 'development' });
    const get = await request(app).get('/proxy?environment=production').set('Authorization', CLIENT_KEY);
    const post = await request(app)
      .post('/proxy')
      .set('Authorization', CLIENT_KEY)
      .send({ context: { environment: 'production' } });
    expect(names(get.body)).not.toContain('prod-only');
    expect(names(post.body)).not.toContain('prod-only');
    const prod = await proxy({ environment: 'production' });
    const res = await request(prod).get('/proxy?environment=development').set('Authorization', CLIENT_KEY);
    expect(names(res.body)).toContain('prod-only');
  });
});

describe('POST /proxy', () => {
  test('mode B returns the toggles enabled for the context, with impressionData and the spec headers', async () => {
    const app = await proxy();
    const res = await request(app)
      .post('/proxy')
      .set('Authorization', CLIENT_KEY)
      .send({ context: { userId: 'alice', properties: { plan: 'pro' } } });
    expect(res.status).toBe(200);
    expect(names(res.body)).toEqual([
      'always-on',
      'for-alice',
      'plan-pro',
      'user-named-disabled',
      'with-variants',
    ]);
    expect(
      res.body.toggles.every((t: { impressionData: unknown }) => typeof t.impressionData === 'boolean'),
    ).toBe(true);
    expect(res.headers['cache-control']).toBe('public, max-age=2');
    expect(res.headers['etag']).toMatch(/^W\//);
  });

  test('mode A returns the named toggles in request order, duplicates removed, unknown names disabled', async () => {
    const app = await proxy();
    const res = await request(app)
      .post('/proxy')
      .set('Authorization', CLIENT_KEY)
      .send({
        context: { userId: 'bob' },
        toggles: ['switched-off', 'no-such-toggle', 'always-on', 'switched-off'],
      });
    expect(res.status).toBe(200);
    expect(res.body.toggles).toEqual([
      {
        name: 'switched-off',
        enabled: false,
        impressionData: false,
        variant: { name: 'disabled', enabled: false },
      },
      {
        name: 'no-such-toggle',
        enabled: false,
        impressionData: false,
        variant: { name: 'disabled', enabled: false },
      },
      {
        name: 'always-on',
        enabled: true,
        impressionData: false,
        variant: { name: 'disabled', enabled: false },
      },
    ]);
  });

  test('an empty toggles list is mode A with nothing asked', async () => {
    const app = await proxy();
    const res = await request(app)
      .post('/proxy')
      .set('Authorization', CLIENT_KEY)
      .send({ context: {}, toggles: [] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ toggles: [] });
  });

  test('turns numbers and booleans into strings, unknown root fields into properties', async () => {
    const app = await proxy();
    const res = await request(app)
      .post('/proxy')
      .set('Authorization', CLIENT_KEY)
      .send({ context: { userId: 42, plan: 'pro', properties: { beta: true } } });
    expect(res.status).toBe(200);
    expect(names(res.body)).toContain('plan-pro');
  });

  test.each([
    [{ context: 'alice' }, 'context'],
    [{ context: { properties: { nested: { a: 1 } } } }, 'context.properties.nested'],
    [{ context: {}, toggles: 'always-on' }, 'toggles'],
    [{ context: {}, toggles: ['ok', 3] }, 'toggles.1'],
    [[1, 2], 'request body must be a JSON object'],
  ])('answers 400 naming the offending field for %j', async (body, field) => {
    const app = await proxy();
    const res = await request(app).post('/proxy').set('Authorization', CLIENT_KEY).send(body);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'ValidationError',
      message: expect.stringContaining(field),
    });
  });

  test('answers 400 for malformed JSON', async () => {
    const app = await proxy();
    const res = await request(app)
      .post('/proxy')
      .set('Authorization', CLIENT_KEY)
      .set('Content-Type', 'application/json')
      .send('{"context": ');
    expect(res.status).toBe(400);
    expect(res.body.name).toBe('ValidationError');
    expect(res.body.message).toContain('not valid JSON');
  });

  test('answers 415 for a body that is not JSON', async () => {
    const app = await proxy();
    const res = await request(app)
      .post('/proxy')
      .set('Authorization', CLIENT_KEY)
      .set('Content-Type', 'text/plain')
      .send('hello');
    expect(res.status).toBe(415);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'ContentTypeError',
      message: expect.stringContaining('application/json'),
    });
  });

  test('answers 413 for a body over the documented limit', async () => {
    const app = await proxy({ maxBodySize: 1024 });
    const res = await request(app)
      .post('/proxy')
      .set('Authorization', CLIENT_KEY)
      .send({ context: { properties: { big: 'x'.repeat(2000) } } });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'PayloadTooLarge',
      message: expect.stringContaining('1024 bytes'),
    });
  });
});

describe('/proxy/all', () => {
  test('returns enabled and disabled toggles when enabled', async () => {
    const app = await proxy({ enableAllEndpoint: true });
    const res = await request(app).get('/proxy/all').set('Authorization', CLIENT_KEY);
    expect(res.status).toBe(200);
    expect(names(res.body)).toEqual(
      sampleFeatures()
        .features.map((f) => (f as { name: string }).name)
        .sort(),
    );
    expect(res.body.toggles.find((t: { name: string }) => t.name === 'switched-off')).toEqual({
      name: 'switched-off',
      enabled: false,
      impressionData: false,
      variant: { name: 'disabled', enabled: false },
    });
    const post = await request(app)
      .post('/proxy/all')
      .set('Authorization', CLIENT_KEY)
      .send({ context: { userId: 'alice' } });
    expect(post.status).toBe(200);
    expect(post.body.toggles).toHaveLength(10);
  });

  test('answers 501 naming the option when not enabled, after the key check', async () => {
    const app = await proxy();
    const noKey = await request(app).get('/proxy/all');
    expect(noKey.status).toBe(401);
    const res = await request(app).get('/proxy/all').set('Authorization', CLIENT_KEY);
    expect(res.status).toBe(501);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'EndpointDisabled',
      message: expect.stringContaining('ENABLE_ALL_ENDPOINT'),
    });
    const post = await request(app).post('/proxy/all').set('Authorization', CLIENT_KEY).send({});
    expect(post.status).toBe(501);
  });
});

describe('client keys', () => {
  test('answers 401 without a key and with an unknown key, without parsing the body', async () => {
    const app = await proxy();
    const missing = await request(app).get('/proxy');
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({
      id: expect.any(String),
      name: 'AuthenticationRequired',
      message: expect.stringContaining('authorization'),
    });
    const wrong = await request(app)
      .post('/proxy')
      .set('Authorization', 'nope')
      .set('Content-Type', 'text/plain')
      .send('x');
    expect(wrong.status).toBe(401);
    expect(JSON.stringify(wrong.body)).not.toContain(CLIENT_KEY);
  });

  test('accepts "Bearer <key>"', async () => {
    const app = await proxy();
    const res = await request(app).get('/proxy').set('Authorization', `Bearer ${CLIENT_KEY}`);
    expect(res.status).toBe(200);
  });

  test('reads the key from a custom header', async () => {
    const app = await proxy({ clientKeysHeaderName: 'X-Client-Key' });
    expect((await request(app).get('/proxy').set('X-Client-Key', CLIENT_KEY)).status).toBe(200);
    expect((await request(app).get('/proxy').set('Authorization', CLIENT_KEY)).status).toBe(401);
  });
});

describe('paths', () => {
  test('proxyBasePath "base/path" serves /base/path/proxy and nothing at /proxy', async () => {
    const app = await proxy({ proxyBasePath: 'base/path' });
    expect((await request(app).get('/base/path/proxy').set('Authorization', CLIENT_KEY)).status).toBe(200);
    expect((await request(app).get('/base/path/proxy/health')).status).toBe(200);
    const root = await request(app).get('/proxy').set('Authorization', CLIENT_KEY);
    expect(root.status).toBe(404);
    expect(root.body.name).toBe('NotFoundError');
  });

  test('unknown paths are 404 with the error body', async () => {
    const app = await proxy();
    const res = await request(app).get('/nothing-here');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'NotFoundError',
      message: 'No endpoint GET /nothing-here',
    });
  });
});

describe('CORS', () => {
  test('answers a preflight without a key, reflecting the requested headers', async () => {
    const app = await proxy();
    const res = await request(app)
      .options('/proxy')
      .set('Origin', 'https://app.example')
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'authorization,content-type');
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-methods']).toBe('GET,POST');
    expect(res.headers['access-control-allow-headers']).toBe('authorization,content-type');
    expect(res.headers['access-control-max-age']).toBe('172800');
  });

  test('applies every cors option', async () => {
    const app = await proxy({
      cors: {
        origin: ['https://a.example', 'https://b.example'],
        credentials: true,
        methods: ['GET'],
        allowedHeaders: ['authorization'],
        exposedHeaders: ['ETag', 'X-Extra'],
        maxAge: 60,
        optionsSuccessStatus: 200,
      },
    });
    const pre = await request(app)
      .options('/proxy')
      .set('Origin', 'https://b.example')
      .set('Access-Control-Request-Method', 'GET');
    expect(pre.status).toBe(200);
    expect(pre.headers['access-control-allow-origin']).toBe('https://b.example');
    expect(pre.headers['access-control-allow-credentials']).toBe('true');
    expect(pre.headers['access-control-allow-methods']).toBe('GET');
    expect(pre.headers['access-control-allow-headers']).toBe('authorization');
    expect(pre.headers['access-control-max-age']).toBe('60');
    const get = await request(app)
      .get('/proxy')
      .set('Origin', 'https://a.example')
      .set('Authorization', CLIENT_KEY);
    expect(get.headers['access-control-expose-headers']).toBe('ETag,X-Extra');
    const foreign = await request(app)
      .get('/proxy')
      .set('Origin', 'https://evil.example')
      .set('Authorization', CLIENT_KEY);
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
  });

  test('error responses carry CORS headers too', async () => {
    const app = await proxy();
    const res = await request(app).get('/proxy').set('Origin', 'https://app.example');
    expect(res.status).toBe(401);
    expect(res.headers['access-control-allow-origin']).toBe('*');
  });
});

describe('robustness', () => {
  test('a flood of malformed requests leaves the proxy answering correctly', async () => {
    const app = await proxy({ maxBodySize: 2048 });
    const server = app.listen(0);
    const { port } = server.address() as { port: number };
    const base = `http://127.0.0.1:${port}/proxy`;
    const json = { Authorization: CLIENT_KEY, 'Content-Type': 'application/json' };
    const bad: Array<() => Promise<Response>> = [
      () => fetch(base, { method: 'POST', headers: json, body: '{"context": [' }),
      () =>
        fetch(base, {
          method: 'POST',
          headers: json,
          body: JSON.stringify({ context: { properties: { a: { b: 1 } } } }),
        }),
      () => fetch(base, { method: 'POST', headers: json, body: 'x'.repeat(5000) }),
      () =>
        fetch(base, {
          method: 'POST',
          headers: { Authorization: CLIENT_KEY, 'Content-Type': 'text/xml' },
          body: '<a/>',
        }),
      () => fetch(`${base}?userId=a&userId=b`, { headers: { Authorization: CLIENT_KEY } }),
      () => fetch(base, { method: 'POST', headers: { Authorization: CLIENT_KEY } }),
      () => fetch(base, { headers: { Authorization: 'x'.repeat(4000) } }),
      () => fetch(`${base}/all`, { method: 'POST', headers: json, body: 'null' }),
    ];
    try {
      const statuses = new Set<number>();
      for (let round = 0; round < 25; round++) {
        const answers = await Promise.all(bad.map((send) => send()));
        for (const res of answers) {
          statuses.add(res.status);
          const body = (await res.json()) as { name: string };
          expect(typeof body.name).toBe('string');
        }
      }
      expect([...statuses].every((s) => s >= 400 && s < 500)).toBe(true);
      const good = await fetch(`${base}?userId=alice`, { headers: { Authorization: CLIENT_KEY } });
      expect(good.status).toBe(200);
      expect(
        ((await good.json()) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name),
      ).toContain('for-alice');
    } finally {
      server.close();
    }
  });
});
