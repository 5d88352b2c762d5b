/**
 * The Unleash frontend API paths (`{prefix}/api/frontend...`) answer exactly as their `/proxy`
 * twins: the same status, headers and body for the same request, errors included.
 */
import request, { type Response } from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { sampleFeatures } from '../../support/fixtures';
import { CLIENT_KEY, proxyFor, readyProxyFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

let upstream: TestUpstream;
const apps: ProxyApp[] = [];

async function proxy(options: Parameters<typeof readyProxyFor>[1] = {}): Promise<ProxyApp> {
  const app = await readyProxyFor(upstream, options);
  apps.push(app);
  return app;
}

beforeAll(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
});

afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await upstream.stop();
});

/** One request, sent to a path under `/proxy` or `/api/frontend`. */
interface Case {
  title: string;
  method: 'get' | 'post' | 'options';
  /** After `/proxy` or `/api/frontend`: `''`, `/all`, `/client/metrics`, `?userId=alice`. */
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

const KEY = { Authorization: CLIENT_KEY };
const JSON_TYPE = { 'Content-Type': 'application/json' };
const now = Date.now();
const metricsBody = JSON.stringify({
  appName: 'parity-app',
  instanceId: 'i-1',
  bucket: {
    start: new Date(now - 1000).toISOString(),
    stop: new Date(now).toISOString(),
    toggles: { 'always-on': { yes: 1, no: 0 } },
  },
});

const CASES: Case[] = [
  {
    title: 'GET with a query context',
    method: 'get',
    path: '?userId=alice&properties[plan]=pro',
    headers: KEY,
  },
  {
    title: 'GET with Bearer',
    method: 'get',
    path: '?userId=bob',
    headers: { Authorization: `Bearer ${CLIENT_KEY}` },
  },
  {
    title: 'POST with a context',
    method: 'post',
    path: '',
    headers: { ...KEY, ...JSON_TYPE },
    body: JSON.stringify({ context: { userId: 'alice', properties: { plan: 'pro' } } }),
  },
  {
    title: 'POST with named toggles',
    method: 'post',
    path: '',
    headers: { ...KEY, ...JSON_TYPE },
    body: JSON.stringify({ context: { userId: 'alice' }, toggles: ['for-alice', 'no-such', 'switched-off'] }),
  },
  {
    title: 'a compressed answer',
    method: 'get',
    path: '?userId=alice',
    headers: { ...KEY, 'Accept-Encoding': 'gzip' },
  },
  { title: 'no client key', method: 'get', path: '' },
  { title: 'an unknown client key', method: 'get', path: '', headers: { Authorization: 'wrong' } },
  {
    title: 'an unknown client key on POST (body never parsed)',
    method: 'post',
    path: '',
    headers: { Authorization: 'wrong', ...JSON_TYPE },
    body: '{',
  },
  {
    title: 'a POST that is not JSON',
    method: 'post',
    path: '',
    headers: { ...KEY, 'Content-Type': 'text/plain' },
    body: 'x',
  },
  {
    title: 'malformed JSON',
    method: 'post',
    path: '',
    headers: { ...KEY, ...JSON_TYPE },
    body: '{"context":',
  },
  {
    title: 'a context that is not an object',
    method: 'post',
    path: '',
    headers: { ...KEY, ...JSON_TYPE },
    body: '{"context":"alice"}',
  },
  {
    title: 'toggles that are not strings',
    method: 'post',
    path: '',
    headers: { ...KEY, ...JSON_TYPE },
    body: '{"toggles":[1]}',
  },
  {
    title: 'a body over the size limit',
    method: 'post',
    path: '',
    headers: { ...KEY, ...JSON_TYPE },
    body: JSON.stringify({ context: { userId: 'x'.repeat(3000) } }),
  },
  { title: 'a query parameter given twice', method: 'get', path: '?userId=a&userId=b', headers: KEY },
  { title: 'GET /all while disabled', method: 'get', path: '/all', headers: KEY },
  {
    title: 'POST /all while disabled',
    method: 'post',
    path: '/all',
    headers: { ...KEY, ...JSON_TYPE },
    body: '{}',
  },
  {
    title: 'client metrics',
    method: 'post',
    path: '/client/metrics',
    headers: { ...KEY, ...JSON_TYPE },
    body: metricsBody,
  },
  {
    title: 'client metrics that are not valid',
    method: 'post',
    path: '/client/metrics',
    headers: { ...KEY, ...JSON_TYPE },
    body: '{"appName":"x"}',
  },
  {
    title: 'client metrics without a key',
    method: 'post',
    path: '/client/metrics',
    headers: JSON_TYPE,
    body: metricsBody,
  },
  {
    title: 'client registration',
    method: 'post',
    path: '/client/register',
    headers: { ...KEY, ...JSON_TYPE },
    body: JSON.stringify({ appName: 'parity-app', instanceId: 'i-1' }),
  },
  {
    title: 'a CORS preflight without a key',
    method: 'options',
    path: '',
    headers: {
      Origin: 'https://app.example',
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'authorization,content-type',
    },
  },
  {
    title: 'a CORS request',
    method: 'get',
    path: '?userId=alice',
    headers: { ...KEY, Origin: 'https://app.example' },
  },
  { title: 'an unknown path below, with a key', method: 'get', path: '/nothing-here', headers: KEY },
];

async function send(app: ProxyApp, base: string, c: Case): Promise<Response> {
  let req = request(app)[c.method](`${base}${c.path}`);
  for (const [name, value] of Object.entries(c.headers ?? {})) req = req.set(name, value);
  if (c.body !== undefined) req = req.send(c.body);
  return req;
}

/** Headers that may differ between two answers to the same request. */
const PER_ANSWER = new Set(['date', 'connection', 'keep-alive']);

/**
 * What must be equal between the twins' answers: status, headers (but Date) and body. An error body
 * carries a fresh id, and a 404 names the path it was asked for: `/api/frontend/x` is read as `/proxy/x`
 * (and its length left out).
 */
function comparable(res: Response) {
  const isError = res.status >= 400;
  const headers = Object.fromEntries(
    Object.entries(res.headers).filter(
      ([name]) => !PER_ANSWER.has(name) && !(isError && name === 'content-length'),
    ),
  );
  const body = res.body as unknown;
  const shownBody =
    isError && typeof body === 'object' && body !== null && 'id' in body && 'message' in body
      ? {
          ...body,
          id: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
          // a message names the path asked for (404s, the disabled /all)
          message: String(body.message).replace(/(^| )\/api\/frontend/, '$1/proxy'),
        }
      : body;
  return { status: res.status, headers, body: shownBody, text: isError ? undefined : res.text };
}

describe('/api/frontend answers exactly as /proxy', () => {
  test.each(CASES)('$title', async (c) => {
    const app = await proxy({ maxBodySize: 2048 });
    const viaProxy = await send(app, '/proxy', c);
    const viaFrontend = await send(app, '/api/frontend', c);
    expect(comparable(viaFrontend)).toEqual(comparable(viaProxy));
    if (viaProxy.status >= 400) {
      expect(viaFrontend.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(Object.keys(viaFrontend.body as object).sort()).toEqual(['id', 'message', 'name']);
    }
  });

  test('an ETag of one path revalidates at the other: a 304 with the same headers', async () => {
    const app = await proxy();
    const first = await request(app).get('/api/frontend?userId=alice').set(KEY);
    expect(first.status).toBe(200);
    const etag = first.headers.etag;
    expect(etag).toMatch(/^W\/".+"$/);
    for (const base of ['/proxy', '/api/frontend']) {
      const again = await request(app)
        .get(`${base}?userId=alice`)
        .set(KEY)
        .set('If-None-Match', etag)
        .set('Cache-Control', 'no-cache');
      expect(again.status).toBe(304);
      expect(again.text).toBe('');
      expect(again.headers.etag).toBe(etag);
      expect(again.headers['cache-control']).toBe('public, max-age=2');
    }
    const post = { context: { userId: 'alice' } };
    const posted = await request(app).post('/api/frontend').set(KEY).send(post);
    const revalidated = await request(app)
      .post('/api/frontend')
      .set(KEY)
      .set('If-None-Match', posted.headers.etag)
      .send(post);
    expect(revalidated.status).toBe(304);
  });

  test('a proxy that is not ready answers 503 at both paths, the same way', async () => {
    const down = await new TestUpstream(sampleFeatures()).start();
    down.fault = { status: 500 };
    const app = proxyFor(down);
    apps.push(app);
    try {
      const viaProxy = await request(app).get('/proxy').set(KEY);
      const viaFrontend = await request(app).get('/api/frontend').set(KEY);
      const single = await request(app).get('/api/frontend/features/always-on').set(KEY);
      expect(viaProxy.status).toBe(503);
      expect(comparable(viaFrontend)).toEqual(comparable(viaProxy));
      expect(comparable(single)).toEqual(comparable(viaProxy));
    } finally {
      await down.stop();
    }
  });

  test('with enableAllEndpoint, /api/frontend/all lists every toggle as /proxy/all does', async () => {
    const app = await proxy({ enableAllEndpoint: true });
    for (const method of ['get', 'post'] as const) {
      const ask = (path: string) =>
        method === 'get'
          ? request(app).get(`${path}?userId=alice`).set(KEY)
          : request(app)
              .post(path)
              .set(KEY)
              .send({ context: { userId: 'alice' } });
      const viaProxy = await ask('/proxy/all');
      const viaFrontend = await ask('/api/frontend/all');
      expect(viaFrontend.status).toBe(200);
      expect(comparable(viaFrontend)).toEqual(comparable(viaProxy));
      const body = viaFrontend.body as { toggles: Array<{ name: string; enabled: boolean }> };
      expect(body.toggles.some((t) => !t.enabled)).toBe(true);
    }
  });

  test('works under proxyBasePath, and not without it', async () => {
    const app = await proxy({ proxyBasePath: '/edge/flags' });
    const based = await request(app).get('/edge/flags/api/frontend?userId=alice').set(KEY);
    expect(based.status).toBe(200);
    expect(
      (await request(app).get('/edge/flags/api/frontend/features/for-alice?userId=alice').set(KEY)).status,
    ).toBe(200);
    const unprefixed = await request(app).get('/api/frontend?userId=alice').set(KEY);
    expect(unprefixed.status).toBe(404);
    expect(unprefixed.body).toMatchObject({ name: 'NotFoundError' });
  });

  test('has no health, server-side SDK or Prometheus endpoints of its own (those stay under /proxy)', async () => {
    const app = await proxy({ expServerSideSdkConfig: { tokens: ['server-token'] } });
    expect((await request(app).get('/api/frontend/health')).status).toBe(401);
    expect((await request(app).get('/api/frontend/health').set(KEY)).status).toBe(404);
    expect(
      (await request(app).get('/api/frontend/client/features').set('Authorization', 'server-token')).status,
    ).toBe(401);
    expect((await request(app).get('/api/frontend/internal-backstage/prometheus').set(KEY)).status).toBe(404);
  });

  test('client metrics sent to /api/frontend reach the upstream under the client app name', async () => {
    const metricsUpstream = await new TestUpstream(sampleFeatures()).start();
    const app = await readyProxyFor(metricsUpstream, { metricsInterval: 100 });
    try {
      const sent = await request(app)
        .post('/api/frontend/client/metrics')
        .set(KEY)
        .set('Content-Type', 'application/json')
        .send(metricsBody);
      expect(sent.status).toBe(202);
      const deadline = Date.now() + 5000;
      const forwarded = () =>
        metricsUpstream
          .posted('/api/client/metrics')
          .filter((r) => (r.body as { appName?: string }).appName === 'parity-app');
      while (forwarded().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const bucket = forwarded()[0]?.body as { bucket: { toggles: Record<string, { yes: number }> } };
      expect(bucket.bucket.toggles['always-on'].yes).toBe(1);
    } finally {
      await app.close();
      await metricsUpstream.stop();
    }
  });
});

describe('GET|POST /api/frontend/features/:name', () => {
  test('answers the one toggle, as POST /proxy with toggles: [name] evaluates it, when enabled', async () => {
    const app = await proxy();
    const res = await request(app).get('/api/frontend/features/with-variants?userId=alice').set(KEY);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('public, max-age=2');
    expect(res.headers.etag).toMatch(/^W\/".+"$/);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    const named = await request(app)
      .post('/proxy')
      .set(KEY)
      .send({ context: { userId: 'alice' }, toggles: ['with-variants'] });
    const [expected] = (named.body as { toggles: unknown[] }).toggles;
    expect(res.body).toEqual(expected);
    expect(res.body).toMatchObject({ name: 'with-variants', enabled: true, impressionData: true });
    expect((res.body as { variant: { payload?: unknown } }).variant.payload).toBeDefined();
  });

  test('evaluates the context: the query for GET, body.context for POST', async () => {
    const app = await proxy();
    expect((await request(app).get('/api/frontend/features/for-alice?userId=alice').set(KEY)).status).toBe(
      200,
    );
    expect((await request(app).get('/api/frontend/features/for-alice?userId=carol').set(KEY)).status).toBe(
      404,
    );
    const posted = await request(app)
      .post('/api/frontend/features/plan-pro')
      .set(KEY)
      .send({ context: { properties: { plan: 'pro' } } });
    expect(posted.status).toBe(200);
    expect(posted.body).toMatchObject({ name: 'plan-pro', enabled: true });
    const free = await request(app)
      .post('/api/frontend/features/plan-pro')
      .set(KEY)
      .send({ context: { properties: { plan: 'free' } } });
    expect(free.status).toBe(404);
  });

  test('answers 304 to a matching If-None-Match, also with Cache-Control: no-cache', async () => {
    const app = await proxy();
    const first = await request(app).get('/api/frontend/features/always-on').set(KEY);
    const again = await request(app)
      .get('/api/frontend/features/always-on')
      .set(KEY)
      .set('If-None-Match', first.headers.etag)
      .set('Cache-Control', 'no-cache');
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.etag).toBe(first.headers.etag);
  });

  test('a disabled and an unknown toggle are the same 404 NotFoundError', async () => {
    const app = await proxy();
    for (const name of ['switched-off', 'no-such-toggle']) {
      const res = await request(app).get(`/api/frontend/features/${name}`).set(KEY);
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.body).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
        name: 'NotFoundError',
        message: `Feature "${name}" is not enabled for this context, or does not exist`,
      });
    }
  });

  test('checks the key (401) and the body (415, 400) like every endpoint', async () => {
    const app = await proxy();
    const noKey = await request(app).get('/api/frontend/features/always-on');
    expect(noKey.status).toBe(401);
    expect(noKey.body).toMatchObject({ name: 'AuthenticationRequired' });
    const text = await request(app)
      .post('/api/frontend/features/always-on')
      .set(KEY)
      .set('Content-Type', 'text/plain')
      .send('x');
    expect(text.status).toBe(415);
    const bad = await request(app).post('/api/frontend/features/always-on').set(KEY).send({ context: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ name: 'ValidationError' });
  });

  test('counts requests by route template, never by raw path', async () => {
    const app = await proxy();
    await request(app).get('/api/frontend/features/always-on').set(KEY);
    await request(app).get('/api/frontend/features/switched-off').set(KEY);
    await request(app).get('/api/frontend?userId=alice').set(KEY);
    await request(app).post('/api/frontend/client/register').set(KEY).send({ appName: 'a', instanceId: 'b' });
    const text = (await request(app).get('/proxy/internal-backstage/prometheus').set(KEY)).text;
    const series = (route: string, status: number, method = 'GET') =>
      `flags_proxy_http_requests_total{method="${method}",route="${route}",status="${status}"} 1`;
    expect(text).toContain(series('/api/frontend/features/:name', 200));
    expect(text).toContain(series('/api/frontend/features/:name', 404));
    expect(text).toContain(series('/api/frontend', 200));
    expect(text).toContain(series('/api/frontend/client/register', 202, 'POST'));
    expect(text).not.toContain('always-on');
    expect(text).not.toContain('switched-off');
  });
});
