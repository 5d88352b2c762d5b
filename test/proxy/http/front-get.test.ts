import http from 'node:http';
import request from 'supertest';
import type { RequestHandler } from 'express';
import type { ProxyApp } from '../../../src/proxy/app';
import type { CorsOptions } from '../../../src/proxy/config/types';
import { CorsHeaderMemo } from '../../../src/proxy/cors/cors-headers';
import { corsMiddleware } from '../../../src/proxy/cors/cors-middleware';
import { LoopbackServers } from '../../support/listen';
import { CLIENT_KEY, expressRouted, readyProxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

/** `everyone` on, and `only-u1` for user u1 while `onlyU1` is true. */
const twoToggles = (onlyU1 = true): FeaturesPayload => ({
  version: 2,
  features: [
    { name: 'everyone', enabled: true, strategies: [{ name: 'default' }] },
    {
      name: 'only-u1',
      enabled: onlyU1,
      strategies: [{ name: 'userWithId', parameters: { userIds: 'u1' } }],
    },
  ],
});

const upstream = new TestUpstream(twoToggles());
const apps: ProxyApp[] = [];
const servers = new LoopbackServers();

beforeAll(() => upstream.start());
afterAll(() => upstream.stop());
afterEach(async () => {
  await servers.closeAll();
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  reusedSocket: boolean;
}

/** One GET over `agent`, so a keep-alive agent with one socket sends everything on one connection. */
function get(url: string, agent: http.Agent, headers: Record<string, string>): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, reusedSocket: req.reusedSocket }),
      );
    });
    req.on('error', reject);
  });
}

const names = (body: string) =>
  (JSON.parse(body) as { toggles: { name: string }[] }).toggles.map((t) => t.name);

describe('GET /proxy through the front on one keep-alive connection', () => {
  test('checks every request’s client key: an accepted key does not let a later wrong or missing key through', async () => {
    const app = await readyProxyFor(upstream, {});
    apps.push(app);
    const { server, url } = await servers.open(app.listener);
    const routed = expressRouted(app);
    let connections = 0;
    server.on('connection', () => (connections += 1));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const requestSeries = async () =>
      (await request(app).get('/proxy/internal-backstage/prometheus').set('authorization', CLIENT_KEY)).text
        .split('\n')
        .filter((l) => l.startsWith('flags_proxy_http_requests_total{') && !l.includes('internal-backstage'))
        .sort();
    try {
      // no series before it has something to count
      expect(await requestSeries()).toEqual([]);
      const path = `${url}/proxy?userId=u1`;
      const ok = await get(path, agent, { authorization: CLIENT_KEY });
      expect(ok.status).toBe(200);
      expect(names(ok.body)).toEqual(['everyone', 'only-u1']);

      const wrong = await get(path, agent, { authorization: `${CLIENT_KEY}x` });
      expect(wrong.status).toBe(401);
      expect(JSON.parse(wrong.body)).toMatchObject({
        name: 'AuthenticationRequired',
        message: 'Invalid client key in the "authorization" header',
      });
      const missing = await get(path, agent, {});
      expect(missing.status).toBe(401);
      const bearer = await get(path, agent, { authorization: `Bearer ${CLIENT_KEY}` });
      expect(bearer.status).toBe(200);
      const again = await get(path, agent, {
        authorization: CLIENT_KEY,
        'if-none-match': String(ok.headers.etag),
      });
      expect(again.status).toBe(304);
      expect(again.headers.etag).toBe(ok.headers.etag);
      const wrongRevalidation = await get(path, agent, {
        authorization: 'nope',
        'if-none-match': String(ok.headers.etag),
      });
      expect(wrongRevalidation.status).toBe(401);

      expect([wrong, missing, bearer, again, wrongRevalidation].every((r) => r.reusedSocket)).toBe(true);
      expect(connections).toBe(1);
      // answers and refusals alike are the front's: none reached Express's router
      expect(routed.filter((u) => u.startsWith('/proxy?'))).toEqual([]);
      expect(await requestSeries()).toEqual([
        'flags_proxy_http_requests_total{method="GET",route="/proxy",status="200"} 2',
        'flags_proxy_http_requests_total{method="GET",route="/proxy",status="304"} 1',
        'flags_proxy_http_requests_total{method="GET",route="unmatched",status="401"} 3',
      ]);
    } finally {
      agent.destroy();
    }
  });

  test('builds the context of each query: a changed query on the same connection gets its own answer', async () => {
    const app = await readyProxyFor(upstream, {});
    apps.push(app);
    const url = await servers.listen(app.listener);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const auth = { authorization: CLIENT_KEY };
    try {
      const sequence = ['u1', 'u2', 'u2', 'u1', 'u3', 'u1'];
      const seen: string[][] = [];
      for (const user of sequence)
        seen.push(names((await get(`${url}/proxy?userId=${user}`, agent, auth)).body));
      expect(seen).toEqual(sequence.map((u) => (u === 'u1' ? ['everyone', 'only-u1'] : ['everyone'])));
      // a 304 is given only for the ETag of this query's own answer
      const u1 = await get(`${url}/proxy?userId=u1`, agent, auth);
      const u2 = await get(`${url}/proxy?userId=u2`, agent, {
        ...auth,
        'if-none-match': String(u1.headers.etag),
      });
      expect(u2.status).toBe(200);
      expect(names(u2.body)).toEqual(['everyone']);
    } finally {
      agent.destroy();
    }
  });
});

describe('what a connection remembers (its last query and accepted key)', () => {
  test('the same query on the same connection is answered for the current definitions: after a change its old ETag gives no 304', async () => {
    const own = new TestUpstream(twoToggles());
    await own.start();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const app = await readyProxyFor(own, { refreshInterval: 50 });
      apps.push(app);
      const url = `${await servers.listen(app.listener)}/proxy?userId=u1`;
      const auth = { authorization: CLIENT_KEY };
      const first = await get(url, agent, auth);
      expect(names(first.body)).toEqual(['everyone', 'only-u1']);
      const etag = String(first.headers.etag);
      expect((await get(url, agent, { ...auth, 'if-none-match': etag })).status).toBe(304);

      const revision = app.features.revision;
      own.setFeatures(twoToggles(false));
      await waitFor(() => app.features.revision !== revision);
      const after = await get(url, agent, { ...auth, 'if-none-match': etag });
      expect(after.reusedSocket).toBe(true);
      expect(after.status).toBe(200);
      expect(names(after.body)).toEqual(['everyone']);
      expect(after.headers.etag).not.toBe(etag);
    } finally {
      agent.destroy();
      await own.stop();
    }
  });

  test('the same query on the same connection is answered for the current clock window: a date that passed changes the answer and its ETag', async () => {
    const at = new Date(Date.now() + 1500).toISOString();
    const own = new TestUpstream({
      version: 2,
      features: [
        {
          name: 'after-launch',
          enabled: true,
          strategies: [
            {
              name: 'default',
              constraints: [{ contextName: 'currentTime', operator: 'DATE_AFTER', value: at }],
            },
          ],
        },
        { name: 'everyone', enabled: true, strategies: [{ name: 'default' }] },
      ],
    });
    await own.start();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const app = await readyProxyFor(own, {});
      apps.push(app);
      const url = `${await servers.listen(app.listener)}/proxy?userId=u1`;
      const auth = { authorization: CLIENT_KEY };
      const before = await get(url, agent, auth);
      expect(names(before.body)).toEqual(['everyone']);
      const etag = String(before.headers.etag);
      expect(etag).toMatch(/^W\/"d-/);
      expect((await get(url, agent, { ...auth, 'if-none-match': etag })).status).toBe(304);

      await waitFor(() => Date.now() > Date.parse(at) + 50, 5000);
      const after = await get(url, agent, { ...auth, 'if-none-match': etag });
      expect(after.reusedSocket).toBe(true);
      expect(after.status).toBe(200);
      expect(names(after.body)).toEqual(['after-launch', 'everyone']);
      expect(after.headers.etag).not.toBe(etag);
    } finally {
      agent.destroy();
      await own.stop();
    }
  });

  test('an accepted key is remembered only as itself: a same-length or prefixed value on that connection is refused, on /proxy/all too', async () => {
    const app = await readyProxyFor(upstream, {});
    apps.push(app);
    const url = await servers.listen(app.listener);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const ok = await get(`${url}/proxy`, agent, { authorization: CLIENT_KEY });
      expect(ok.status).toBe(200);
      const sameLength = `${CLIENT_KEY.slice(0, -1)}X`;
      for (const value of [sameLength, CLIENT_KEY.slice(0, -1), `${CLIENT_KEY} `.repeat(2)]) {
        const refused = await get(`${url}/proxy`, agent, { authorization: value });
        expect(refused.reusedSocket).toBe(true);
        expect(refused.status).toBe(401);
      }
      // /proxy/all (no connection memo of its query) runs the same key step
      const viaAll = await get(`${url}/proxy/all`, agent, { authorization: sameLength });
      expect(viaAll.reusedSocket).toBe(true);
      expect(viaAll.status).toBe(401);
      expect((await get(`${url}/proxy`, agent, { authorization: CLIENT_KEY })).status).toBe(200);
    } finally {
      agent.destroy();
    }
  });
});

describe('the front and CORS', () => {
  const strip = (headers: Record<string, unknown>) => {
    const { date: _date, ...rest } = headers;
    return rest;
  };
  const configs: CorsOptions[] = [
    {},
    { origin: 'https://app.example' },
    { origin: ['https://app.example', 'https://other.example'], exposedHeaders: ['ETag', 'X-Extra'] },
    { origin: /\.example$/ },
    { origin: '*', credentials: true },
    { origin: false },
  ];
  const origins = [undefined, 'https://app.example', 'https://other.example', 'https://evil.test'];

  test.each(
    configs.map((cors) => [
      JSON.stringify(cors, (_k, v: unknown) => (v instanceof RegExp ? String(v) : v)),
      cors,
    ]),
  )(
    'answers 200 and 304 through the listener with the headers it gives through Express, for cors %s',
    async (_name, cors) => {
      const front = await readyProxyFor(upstream, { cors });
      // trustProxy sends every request through Express; without X-Forwarded-For the context is the same
      const express = await readyProxyFor(upstream, { cors, trustProxy: true });
      apps.push(front, express);
      const routed = expressRouted(front);
      for (const origin of origins) {
        const headers: Record<string, string> = { authorization: CLIENT_KEY, ...(origin ? { origin } : {}) };
        const [a, b] = await Promise.all(
          [front.listener, express].map((app) => request(app).get('/proxy?userId=u1').set(headers)),
        );
        expect([origin, a.status, strip(a.headers)]).toEqual([origin, b.status, strip(b.headers)]);
        expect(a.status).toBe(200);
        const [ra, rb] = await Promise.all(
          [front.listener, express].map((app) =>
            request(app).get('/proxy?userId=u1').set(headers).set('If-None-Match', String(a.headers.etag)),
          ),
        );
        expect([origin, ra.status, strip(ra.headers)]).toEqual([origin, rb.status, strip(rb.headers)]);
        expect(ra.status).toBe(304);
      }
      expect(routed).toEqual([]);
    },
  );
});

describe('CorsHeaderMemo', () => {
  test('gives the middleware’s own headers per origin, and keeps at most 256 origins', () => {
    let runs = 0;
    const middleware = corsMiddleware({
      origin: /\.example$/,
      credentials: true,
      exposedHeaders: ['ETag'],
      methods: ['GET'],
      allowedHeaders: undefined,
      maxAge: 0,
      optionsSuccessStatus: 204,
      preflightContinue: false,
    });
    const counting: RequestHandler = (req, res, next) => {
      runs += 1;
      return middleware(req, res, next);
    };
    const memo = new CorsHeaderMemo(counting);
    expect(memo.headersFor('https://a.example')).toEqual([
      'Access-Control-Allow-Origin',
      'https://a.example',
      'Vary',
      'Origin',
      'Access-Control-Allow-Credentials',
      'true',
      'Access-Control-Expose-Headers',
      'ETag',
    ]);
    expect(memo.headersFor('https://evil.test')).toEqual([
      'Vary',
      'Origin',
      'Access-Control-Allow-Credentials',
      'true',
      'Access-Control-Expose-Headers',
      'ETag',
    ]);
    expect(memo.headersFor('https://a.example')).toHaveLength(8);
    expect(runs).toBe(2);
    for (let i = 0; i < 600; i += 1) memo.headersFor(`https://o${i}.example`);
    expect((memo as unknown as { byOrigin: Map<unknown, unknown> }).byOrigin.size).toBeLessThanOrEqual(256);
  });

  test('gives nothing to reuse when the middleware does not pass the request on synchronously', () => {
    const later: RequestHandler = (_req, _res, next) => {
      setImmediate(next);
    };
    const throwing: RequestHandler = () => {
      throw new Error('boom');
    };
    const refusing: RequestHandler = (_req, _res, next) => next(new Error('no'));
    expect(new CorsHeaderMemo(later).headersFor('https://a.example')).toBeUndefined();
    expect(new CorsHeaderMemo(throwing).headersFor(undefined)).toBeUndefined();
    expect(new CorsHeaderMemo(refusing).headersFor(undefined)).toBeUndefined();
  });
});
