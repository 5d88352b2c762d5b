/**
 * Every answer that depends on the caller's key names the key's header(s) in `Vary`, on its 200 and
 * its 304, whichever writer sends it (the front's endpoints, the Express routes of the client API), with compression on or off, for the default and a configured key header: a shared cache
 * (nginx, a CDN) then keeps one entry per key (`shared-cache.test.ts` runs a real one). `Vary` is one
 * header line, `Accept-Encoding` named once, CORS's `Origin` kept.
 */
import http from 'node:http';
import { gunzipSync } from 'node:zlib';
import type { HeaderObject, OpenAPIObject, ResponseObject } from 'openapi3-ts/oas31';
import type { ProxyApp } from '../../../src/proxy/app';
import type { ProxyOptions } from '../../../src/proxy/config/types';
import { LoopbackServers } from '../../support/listen';
import { CLIENT_KEY, expressRouted, readyProxyFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

const SERVER_TOKEN = 'server-sdk-token-1';
/** Long enough that every answer with a body passes the compression threshold (1 KB). */
const BIG_VALUE = 'x'.repeat(1500);

const DEFINITIONS: FeaturesPayload = {
  version: 2,
  features: [
    ...Array.from({ length: 20 }, (_, i) => ({
      name: `toggle-with-a-fairly-long-name-${i}`,
      enabled: true,
      project: 'default',
      strategies: [{ name: 'default' }],
    })),
    {
      name: 'big',
      enabled: true,
      project: 'default',
      strategies: [{ name: 'default' }],
      variants: [
        { name: 'v', weight: 1000, stickiness: 'default', payload: { type: 'string', value: BIG_VALUE } },
      ],
    },
  ],
};

type KeyHeader = 'client' | 'server' | 'x-api-key' | 'bearer';

interface Surface {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  /** Which header carries the key: the configured client-key header, `Authorization` with a server token, … */
  key: KeyHeader;
  /** Which `Vary` value it carries. */
  kind: 'evaluation' | 'ofrep' | 'clientApi';
  cacheControl: string;
  /** Served by an endpoint of the front (through `app.listener` it never reaches Express's router). */
  front: boolean;
  /** Has a validator: a second request with `If-None-Match` is a 304. */
  revalidates: boolean;
}

const context = { context: { userId: 'u1' } };
const ofrepContext = { context: { targetingKey: 'u1' } };
const PUBLIC = 'public, max-age=2';
const evaluation = (method: 'GET' | 'POST', path: string): Surface => ({
  method,
  path,
  body: method === 'POST' ? context : undefined,
  key: 'client',
  kind: 'evaluation',
  cacheControl: PUBLIC,
  front: true,
  revalidates: true,
});

const SURFACES: Surface[] = [
  ...['/proxy', '/api/frontend', '/api/proxy'].flatMap((base) => [
    evaluation('GET', `${base}?userId=u1`),
    evaluation('POST', base),
    evaluation('GET', `${base}/all?userId=u1`),
    evaluation('POST', `${base}/all`),
  ]),
  evaluation('GET', '/api/frontend/features/big?userId=u1'),
  evaluation('POST', '/api/frontend/features/big'),
  ...(['client', 'bearer', 'x-api-key'] as const).map((key): Surface => ({
    method: 'POST',
    path: '/ofrep/v1/evaluate/flags',
    body: ofrepContext,
    key,
    kind: 'ofrep',
    cacheControl: 'no-cache',
    front: true,
    revalidates: true,
  })),
  ...(['client', 'x-api-key'] as const).map((key): Surface => ({
    method: 'POST',
    path: '/ofrep/v1/evaluate/flags/big',
    body: ofrepContext,
    key,
    kind: 'ofrep',
    cacheControl: 'no-store',
    front: true,
    revalidates: false,
  })),
  ...['/proxy/client/features', '/api/client/features'].map((path): Surface => ({
    method: 'GET',
    path,
    key: 'server',
    kind: 'clientApi',
    cacheControl: 'no-cache',
    front: false,
    revalidates: true,
  })),
];

interface Setup {
  name: string;
  options: ProxyOptions;
  /** The configured client-key header, as requests send it. */
  header: string;
  /** Extra request headers (an `Origin`). */
  extra: Record<string, string>;
  /** The expected `Vary` of each kind of answer, written out. */
  vary: Record<Surface['kind'], string>;
}

const SETUPS: Setup[] = [
  {
    name: 'the default key header (Authorization)',
    options: {},
    header: 'authorization',
    extra: {},
    vary: {
      evaluation: 'Accept-Encoding, Authorization',
      ofrep: 'Accept-Encoding, Authorization, X-API-Key',
      clientApi: 'Accept-Encoding, Authorization',
    },
  },
  {
    name: 'a configured key header (CLIENT_KEY_HEADER_NAME=x-client-key)',
    options: { clientKeysHeaderName: 'x-client-key' },
    header: 'x-client-key',
    extra: {},
    vary: {
      evaluation: 'Accept-Encoding, X-Client-Key',
      ofrep: 'Accept-Encoding, X-Client-Key, Authorization, X-API-Key',
      clientApi: 'Accept-Encoding, Authorization',
    },
  },
  {
    name: 'CORS for a listed origin (which adds Origin to Vary)',
    options: { cors: { origin: ['https://app.example'] } },
    header: 'authorization',
    extra: { origin: 'https://app.example' },
    vary: {
      evaluation: 'Origin, Accept-Encoding, Authorization',
      ofrep: 'Origin, Accept-Encoding, Authorization, X-API-Key',
      clientApi: 'Origin, Accept-Encoding, Authorization',
    },
  },
];

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The header names as sent, to count `Vary` lines (Node joins repeated ones in `headers`). */
  rawNames: string[];
  body: Buffer;
}

function send(base: string, surface: Surface, headers: Record<string, string>): Promise<Got> {
  const payload = surface.body === undefined ? undefined : JSON.stringify(surface.body);
  const all = payload
    ? { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }
    : headers;
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}${surface.path}`,
      { method: surface.method, headers: all, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            rawNames: res.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase()),
            body: Buffer.concat(chunks),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

function keyHeaders(setup: Setup, key: KeyHeader): Record<string, string> {
  switch (key) {
    case 'client':
      return { [setup.header]: CLIENT_KEY };
    case 'server':
      return { authorization: SERVER_TOKEN };
    case 'bearer':
      return { authorization: `Bearer ${CLIENT_KEY}` };
    case 'x-api-key':
      return { 'x-api-key': CLIENT_KEY };
  }
}

const upstream = new TestUpstream(DEFINITIONS);
const servers = new LoopbackServers();
const apps: ProxyApp[] = [];

beforeAll(() => upstream.start());
afterAll(async () => {
  await servers.closeAll();
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await upstream.stop();
});

describe.each(SETUPS)('Vary names the key header, with $name', (setup) => {
  let url: string;
  let routed: string[] = [];

  beforeAll(async () => {
    const app = await readyProxyFor(upstream, {
      enableAllEndpoint: true,
      expServerSideSdkConfig: { tokens: [SERVER_TOKEN] },
      ...setup.options,
    });
    apps.push(app);
    routed = expressRouted(app);
    // as `start()` serves it: the front first, Express for the rest
    url = await servers.listen(app.listener);
  });

  describe.each<{ encoding: string; acceptEncoding: Record<string, string> }>([
    { encoding: 'gzip', acceptEncoding: { 'accept-encoding': 'gzip' } },
    { encoding: 'identity', acceptEncoding: {} },
  ])('Accept-Encoding: $encoding', ({ acceptEncoding }) => {
    test.each(SURFACES.map((s) => ({ ...s, label: `${s.method} ${s.path} (key: ${s.key})` })))(
      '$label: on the 200 and the 304, one Vary line',
      async (surface) => {
        const headers = { ...setup.extra, ...acceptEncoding, ...keyHeaders(setup, surface.key) };
        const expected = setup.vary[surface.kind];
        const routedBefore = routed.length;

        const ok = await send(url, surface, headers);
        expect(ok.status).toBe(200);
        expect(ok.headers.vary).toBe(expected);
        expect(ok.rawNames.filter((n) => n === 'vary')).toHaveLength(1);
        expect(ok.headers['cache-control']).toBe(surface.cacheControl);
        // the body is compressed when asked for (every body here is over the 1 KB threshold)
        const gzip = 'accept-encoding' in acceptEncoding;
        expect(ok.headers['content-encoding']).toBe(gzip ? 'gzip' : undefined);
        const text = (gzip ? gunzipSync(ok.body) : ok.body).toString('utf8');
        expect(text.length).toBeGreaterThan(1024);
        expect(routed.length - routedBefore).toBe(surface.front ? 0 : 1);
        if (!surface.revalidates) return;

        const etag = ok.headers.etag;
        expect(typeof etag).toBe('string');
        const again = await send(url, surface, { ...headers, 'if-none-match': String(etag) });
        expect(again.status).toBe(304);
        expect(again.body.length).toBe(0);
        expect(again.headers.vary).toBe(expected);
        expect(again.rawNames.filter((n) => n === 'vary')).toHaveLength(1);
        expect(again.headers.etag).toBe(etag);
        expect(routed.length - routedBefore).toBe(surface.front ? 0 : 2);
      },
    );
  });
});

describe('the OpenAPI document', () => {
  test('names the configured key header in the Vary of every key-dependent 200 and 304', async () => {
    const app = await readyProxyFor(upstream, { enableOAS: true, clientKeysHeaderName: 'x-client-key' });
    apps.push(app);
    const url = await servers.listen(app);
    const doc = (await (await fetch(`${url}/docs/openapi.json`)).json()) as OpenAPIObject;
    const varyOf = (path: string, method: 'get' | 'post', status: string): unknown => {
      const response = (doc.paths?.[path]?.[method]?.responses as Record<string, ResponseObject>)[status];
      return (response.headers?.Vary as HeaderObject | undefined)?.schema;
    };
    const evaluationVary = { type: 'string', const: 'Accept-Encoding, X-Client-Key' };
    for (const path of [
      '/proxy',
      '/proxy/all',
      '/api/frontend',
      '/api/frontend/all',
      '/api/proxy',
      '/api/proxy/all',
    ])
      for (const method of ['get', 'post'] as const)
        for (const status of ['200', '304'])
          expect([path, method, status, varyOf(path, method, status)]).toEqual([
            path,
            method,
            status,
            evaluationVary,
          ]);
    const ofrepVary = { type: 'string', const: 'Accept-Encoding, X-Client-Key, Authorization, X-API-Key' };
    expect(varyOf('/ofrep/v1/evaluate/flags', 'post', '200')).toEqual(ofrepVary);
    expect(varyOf('/ofrep/v1/evaluate/flags', 'post', '304')).toEqual(ofrepVary);
    expect(varyOf('/ofrep/v1/evaluate/flags/{key}', 'post', '200')).toEqual(ofrepVary);
    const clientVary = { type: 'string', const: 'Accept-Encoding, Authorization' };
    for (const path of ['/proxy/client/features', '/api/client/features'])
      for (const status of ['200', '304']) expect(varyOf(path, 'get', status)).toEqual(clientVary);
  });
});
