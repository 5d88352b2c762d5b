/**
 * Every route passes the same gate: the address lists, CORS, readiness, the key step, the request
 * series, compression and the error shape are the gate's, for the evaluation endpoints and the cold
 * routes alike, through `app.listener` and through the Express app.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import type { ProxyApp } from '../../../src/proxy/app';
import type { ProxyOptions } from '../../../src/proxy/config/types';
import { RouteTable } from '../../../src/proxy/http/route-table';
import { sampleFeatures } from '../../support/fixtures';
import { CLIENT_KEY, proxyFor, readyProxyFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

const SERVER_TOKEN = 'server-sdk-token-7f3a';
const ORIGIN = 'https://app.example';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on('error', (err: Error) => reject(new Error(`${method} ${path}: ${err.message}`)));
    req.end(body);
  });
}

async function listen(listener: http.RequestListener): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

const json = { 'Content-Type': 'application/json' };
const usageBody = JSON.stringify({
  appName: 'one-gate',
  instanceId: 'i-1',
  bucket: { start: new Date().toISOString(), stop: new Date().toISOString(), toggles: {} },
});

/** One request of each kind of route, with what it answers and the series label it gets. */
const ROUTES: ReadonlyArray<{
  name: string;
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  status: number;
  label: string;
}> = [
  {
    name: 'evaluation',
    method: 'GET',
    path: '/proxy',
    headers: { Authorization: CLIENT_KEY },
    status: 200,
    label: '/proxy',
  },
  { name: 'health', method: 'GET', path: '/proxy/health', status: 200, label: '/proxy/health' },
  {
    name: 'keyed scrape',
    method: 'GET',
    path: '/proxy/internal-backstage/prometheus',
    headers: { Authorization: CLIENT_KEY },
    status: 200,
    label: '/proxy/internal-backstage/prometheus',
  },
  {
    name: 'server-side SDK definitions',
    method: 'GET',
    path: '/proxy/client/features',
    headers: { Authorization: SERVER_TOKEN },
    status: 200,
    label: '/proxy/client/features',
  },
  {
    name: 'usage',
    method: 'POST',
    path: '/proxy/client/metrics',
    headers: { Authorization: CLIENT_KEY, ...json },
    body: usageBody,
    status: 202,
    label: '/proxy/client/metrics',
  },
  {
    name: 'backstage',
    method: 'GET',
    path: '/internal-backstage/health',
    status: 200,
    label: '/internal-backstage/health',
  },
  {
    name: 'status page',
    method: 'GET',
    path: '/internal-backstage/status',
    status: 200,
    label: '/internal-backstage/status',
  },
  {
    name: 'chain endpoint',
    method: 'POST',
    path: '/edge/validate',
    headers: json,
    body: JSON.stringify({ tokens: [] }),
    status: 200,
    label: '/edge/validate',
  },
  {
    name: 'OpenAPI document',
    method: 'GET',
    path: '/docs/openapi.json',
    status: 200,
    label: '/docs/openapi.json',
  },
  { name: 'a path of nobody', method: 'GET', path: '/nowhere', status: 404, label: 'unmatched' },
  {
    name: 'another path under /proxy, with its key',
    method: 'DELETE',
    path: '/proxy/anything',
    headers: { Authorization: CLIENT_KEY },
    status: 404,
    label: 'unmatched',
  },
];

describe('one gate for every route', () => {
  let upstream: TestUpstream;
  let app: ProxyApp;
  const servers: http.Server[] = [];
  let viaListener: number;
  let viaExpress: number;
  const options: ProxyOptions = {
    enableOAS: true,
    expServerSideSdkConfig: { tokens: [SERVER_TOKEN] },
    cors: { origin: ORIGIN },
  };

  beforeAll(async () => {
    upstream = await new TestUpstream(sampleFeatures()).start();
    app = await readyProxyFor(upstream, options);
    const listener = await listen(app.listener);
    const express = await listen(app);
    servers.push(listener.server, express.server);
    viaListener = listener.port;
    viaExpress = express.port;
  });

  afterAll(async () => {
    for (const server of servers) await new Promise((resolve) => server.close(resolve));
    await app.close();
    await upstream.stop();
  });

  test.each(ROUTES)('$name: the same status and CORS headers through both ways in', async (route) => {
    for (const port of [viaListener, viaExpress]) {
      const res = await send(
        port,
        route.method,
        route.path,
        { Origin: ORIGIN, ...route.headers },
        route.body,
      );
      expect({ port, status: res.status }).toEqual({ port, status: route.status });
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
    }
  });

  test('each request is counted once under its route template; what no route takes as `unmatched`', async () => {
    const before = await series();
    for (const route of ROUTES) await send(viaListener, route.method, route.path, route.headers, route.body);
    const after = await series();
    for (const route of ROUTES) {
      const key = `${route.method}|${route.label}|${route.status}`;
      const expected = ROUTES.filter((r) => `${r.method}|${r.label}|${r.status}` === key).length;
      expect({ key, added: (after.get(key) ?? 0) - (before.get(key) ?? 0) }).toEqual({
        key,
        added: expected,
      });
    }
  });

  test('a preflight is answered by the CORS step on any path, before readiness and keys', async () => {
    for (const path of ['/proxy', '/proxy/health', '/internal-backstage/status', '/nowhere']) {
      const res = await send(viaListener, 'OPTIONS', path, {
        Origin: ORIGIN,
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization,content-type',
      });
      expect({ path, status: res.status }).toEqual({ path, status: 204 });
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
      expect(res.headers['access-control-allow-methods']).toContain('POST');
    }
  });

  test('the cold routes answer compressed like the others, and fail in the standard shape', async () => {
    const res = await send(viaListener, 'GET', '/docs/openapi.json', { 'Accept-Encoding': 'gzip' });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(JSON.parse(gunzipSync(res.body).toString('utf8'))).toMatchObject({ openapi: expect.any(String) });
    const refused = await send(viaListener, 'GET', '/proxy/client/features', { Authorization: CLIENT_KEY });
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body.toString('utf8'))).toEqual({
      id: expect.any(String),
      name: 'AuthenticationRequired',
      message: 'Invalid server-side SDK token in the "authorization" header',
    });
  });

  async function series(): Promise<Map<string, number>> {
    const text = (await app.metrics.scrape()).split('\n');
    const counts = new Map<string, number>();
    for (const line of text) {
      const m =
        /^flags_proxy_http_requests_total\{method="([^"]+)",route="([^"]+)",status="(\d+)"\} (\d+)$/.exec(
          line,
        );
      if (m) counts.set(`${m[1]}|${m[2]}|${m[3]}`, Number(m[4]));
    }
    return counts;
  }
});

describe('the gate before readiness and for a refused address', () => {
  test('every route is refused 403 from a DENY_LIST address, before readiness, keys and bodies', async () => {
    const upstream = await new TestUpstream(sampleFeatures()).start();
    const app = await readyProxyFor(upstream, { enableOAS: true, denyList: ['127.0.0.0/8', '::1'] });
    const { server, port } = await listen(app.listener);
    try {
      for (const route of ROUTES) {
        const res = await send(port, route.method, route.path, route.headers, route.body);
        expect({ path: route.path, status: res.status }).toEqual({ path: route.path, status: 403 });
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await app.close();
      await upstream.stop();
    }
  });

  test('the routes declared to wait for definitions answer 503 until then; the backstage and docs do not wait', async () => {
    const upstream = await new TestUpstream(sampleFeatures()).start();
    upstream.fault = { status: 503 };
    const app = proxyFor(upstream, { enableOAS: true, expServerSideSdkConfig: { tokens: [SERVER_TOKEN] } });
    const { server, port } = await listen(app.listener);
    try {
      const waiting = ROUTES.filter((r) => r.path.startsWith('/proxy'));
      for (const route of waiting) {
        const res = await send(port, route.method, route.path, route.headers, route.body);
        expect({ path: route.path, status: res.status }).toEqual({ path: route.path, status: 503 });
        expect(res.headers['retry-after']).toBe('1');
      }
      for (const [method, path, body] of [
        ['GET', '/internal-backstage/health', undefined],
        ['GET', '/docs/openapi.json', undefined],
        ['POST', '/edge/validate', '{"tokens":[]}'],
      ] as const) {
        const res = await send(port, method, path, json, body);
        expect({ path, status: res.status }).toEqual({ path, status: 200 });
      }
      expect((await send(port, 'GET', '/internal-backstage/ready')).status).toBe(503);
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await app.close();
      await upstream.stop();
    }
  });
});

describe('route table', () => {
  const table = new RouteTable<string>();
  table.add('GET', '/proxy', 'list');
  table.add('GET', '/api/frontend/features/:name', 'feature');
  table.add('*', '/proxy/*', 'under proxy');
  table.add('GET', '/docs/openapi/*', 'docs ui');
  table.add('*', '/*', 'nobody');

  test.each([
    ['GET', '/proxy', 'list'],
    ['HEAD', '/PROXY/', 'list'],
    ['POST', '/proxy', 'under proxy'],
    ['DELETE', '/proxy/x/y', 'under proxy'],
    ['GET', '/proxyfoo', 'nobody'],
    ['GET', '/api/frontend/features/a%20b', 'feature'],
    ['GET', '/api/frontend/features/', 'nobody'],
    ['GET', '/docs/openapi', 'docs ui'],
    ['GET', '/Docs/OpenAPI/index.css', 'docs ui'],
    ['POST', '/docs/openapi/index.css', 'nobody'],
    ['OPTIONS', '/', 'nobody'],
  ])('%s %s → %s', (method, path, expected) => {
    expect(table.match(method, path)?.target).toBe(expected);
  });

  test('a parameter is left encoded for the gate, and a prefix has none', () => {
    expect(table.match('GET', '/api/frontend/features/a%20b')?.params).toEqual({ name: 'a%20b' });
    expect(table.match('GET', '/proxy/x')?.params).toEqual({});
    expect(table.match('GET', '/proxy/x')?.template).toBe('/proxy/*');
  });
});
