/**
 * The front's OFREP bulk endpoint through its two ways in: a server's listener (`app.listener`, as
 * `start()` serves: Node's request, no Express in front) and Express (a proxy with `trustProxy`,
 * whose listener is the Express app): for random and malformed requests to `POST {prefix}/ofrep/v1/evaluate/flags` (contexts,
 * targetingKey forms, bodies, content types, lengths and framings, keys right and wrong in each
 * header OFREP reads and as `Bearer`, origins, gzip, hosts, If-None-Match and revalidation with the
 * ETag just returned), both give the same status, headers and body, and
 * count the same requests under the same route labels. The only headers left out are those of the
 * connection (`Date`, `Connection`, `Keep-Alive`); an error's `id` is new for every answer. Every
 * request names its `Host`, so the stream URL in the answer (host, token of the key, `since`: the
 * definitions' digest) is the same from both proxies and compared whole.
 *
 * Through the listener no request to the endpoint reaches Express's router: the front answers
 * every one itself, in OFREP's shapes.
 */
import http from 'node:http';
import fc from 'fast-check';
import type { ProxyApp } from '../../../src/proxy/app';
import type { ProxyOptions } from '../../../src/proxy/config/types';
import { LoopbackServers } from '../../support/listen';
import { CLIENT_KEY, expressRouted, readyProxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';
import {
  ALLOWED_ORIGIN,
  MAX_BODY,
  SERVER_TOKEN,
  SIMPLE_KEYS,
  payload,
  send,
  sentArb,
  type Got,
  type KeyChoice,
  type Sent,
} from './bulk-requests';

const RUNS = Number(process.env.OFREP_BULK_RUNS ?? 150);
jest.setTimeout(180_000);

const COMMON: ProxyOptions = {
  maxBodySize: MAX_BODY,
  cors: { origin: [ALLOWED_ORIGIN, 'https://other.example'] },
  expServerSideSdkConfig: { tokens: [SERVER_TOKEN] },
};

// Environments: two upstream tokens, configured keys for each, and Unleash-format keys the
// upstream is asked about (once; then known without waiting), one of them a project's view.
const UP_DEV = '*:development.upstream-dev-secret';
const UP_PROD = '*:production.upstream-prod-secret';
const FE_DEV = '*:development.frontend-dev-1';
const FE_SHOP = 'shop:development.frontend-shop-1';
const BE_DEV = '*:development.backend-dev-1';
const DEV: FeaturesPayload = {
  ...payload,
  features: payload.features.map((f, i) => ({ ...(f as object), project: i % 2 === 0 ? 'shop' : 'default' })),
};
const PROD: FeaturesPayload = { ...payload, features: payload.features.slice(0, 3) };

/** A proxy served through its listener and one served by the Express app, and what reached each one's router. */
interface Pair {
  name: string;
  /** Base path of both proxies. */
  prefix: string;
  /** The headers a key is read from, the configured one first. */
  keyHeaders: readonly string[];
  keys: KeyChoice;
  listener: Side;
  express: Side;
}

interface Side {
  app: ProxyApp;
  url: string;
  /** One keep-alive connection (the key step remembers the last key accepted on a connection). */
  agent: http.Agent;
  /** Request URLs that reached Express's router. */
  routed: string[];
}

const upstream = new TestUpstream(payload);
const envUpstream = new TestUpstream(DEV, UP_DEV);
const servers = new LoopbackServers();
const sides: Side[] = [];

async function side(up: TestUpstream, options: ProxyOptions, via: 'listener' | 'express'): Promise<Side> {
  const app = await readyProxyFor(up, options);
  const routed = expressRouted(app);
  const made: Side = {
    app,
    url: await servers.listen(via === 'listener' ? app.listener : app),
    agent: new http.Agent({ keepAlive: true, maxSockets: 1 }),
    routed,
  };
  sides.push(made);
  return made;
}

async function pair(
  name: string,
  up: TestUpstream,
  options: ProxyOptions,
  keyHeaders: readonly string[],
  keys: KeyChoice = SIMPLE_KEYS,
): Promise<Pair> {
  return {
    name,
    prefix: options.proxyBasePath ?? '',
    keyHeaders,
    keys,
    listener: await side(up, { ...COMMON, ...options }, 'listener'),
    express: await side(up, { ...COMMON, ...options, trustProxy: true }, 'express'),
  };
}

beforeAll(async () => {
  await upstream.start();
  await envUpstream.start();
  envUpstream.addToken(UP_PROD, PROD);
  envUpstream.knownTokens.set(FE_DEV, { type: 'frontend', environment: 'development', projects: ['*'] });
  envUpstream.knownTokens.set(FE_SHOP, { type: 'frontend', environment: 'development', projects: ['shop'] });
  envUpstream.knownTokens.set(BE_DEV, { type: 'client', environment: 'development', projects: ['*'] });
});
afterAll(async () => {
  for (const s of sides) s.agent.destroy();
  await servers.closeAll();
  await Promise.all(sides.map((s) => s.app.close()));
  await upstream.stop();
  await envUpstream.stop();
});

/** The request series of a proxy (counts by method, route and status; durations differ). */
async function requestCounts(app: ProxyApp): Promise<string[]> {
  return (await app.metrics.registry.metrics())
    .split('\n')
    .filter(
      (l) =>
        l.startsWith('flags_proxy_http_requests_total{') ||
        l.startsWith('flags_proxy_http_request_duration_seconds_count{'),
    )
    .sort();
}

/** Both proxies' answers to the same request, the listener's first. */
async function both(p: Pair, sent: Sent): Promise<[Got, Got]> {
  const at = { ...sent, path: `${p.prefix}${sent.path}` };
  return [
    await within(send(p.listener.url, at, p.listener.agent), 'the listener'),
    await within(send(p.express.url, at, p.express.agent), 'Express'),
  ];
}

/** An answer that does not come is a failure of its own, not the test's time limit. */
function within<T>(answer: Promise<T>, who: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${who} did not answer within 5 s`)), 5000);
  });
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}

/** Runs the differential on one pair; gives how many requests the front answered without Express. */
async function differential(p: Pair): Promise<{ sent: number; answeredByFront: number }> {
  let sent = 0;
  const routedBefore = p.listener.routed.length;
  await fc.assert(
    fc.asyncProperty(sentArb(p.keyHeaders, p.keys), fc.boolean(), async (request, revalidate) => {
      let asked = request;
      if (revalidate) {
        const [first, again] = await both(p, request);
        sent += 1;
        expect(first).toEqual(again);
        const etag = first.headers.etag;
        if (typeof etag === 'string')
          asked = { ...request, headers: { ...request.headers, 'if-none-match': etag } };
      }
      const [viaListener, viaExpress] = await both(p, asked);
      sent += 1;
      expect(viaListener).toEqual(viaExpress);
    }),
    { numRuns: RUNS },
  );
  // Express routes every request it is given; both count the same requests under the same labels
  expect(p.express.routed.length).toBe(sent);
  await waitFor(async () => {
    const [listener, express] = await Promise.all([
      requestCounts(p.listener.app),
      requestCounts(p.express.app),
    ]);
    return listener.length > 0 && JSON.stringify(listener) === JSON.stringify(express);
  }).catch(async () => {
    expect(await requestCounts(p.listener.app)).toEqual(await requestCounts(p.express.app));
  });
  // through the listener only the one path no endpoint serves (OFREP's 404) reached Express
  expect(new Set(p.listener.routed.slice(routedBefore))).toEqual(
    new Set(p.listener.routed.length > routedBefore ? [`${p.prefix}/ofrep/v1/evaluate`] : []),
  );
  return { sent, answeredByFront: sent - (p.listener.routed.length - routedBefore) };
}

describe('OFREP bulk through the front', () => {
  test('answers every request through the listener as through Express: same status, headers, body and request series', async () => {
    const p = await pair('default', upstream, {}, ['authorization', 'x-api-key']);
    const { sent, answeredByFront } = await differential(p);
    // not a vacuous comparison: through the listener the front answered all but the 404s itself
    expect(answeredByFront).toBeGreaterThan(sent * 0.8);
  });

  test('the same with another key header and a base path (Authorization and X-API-Key are other candidates there)', async () => {
    const p = await pair(
      'custom header',
      upstream,
      { clientKeysHeaderName: 'x-client-key', proxyBasePath: '/edge' },
      ['x-client-key', 'authorization', 'x-api-key'],
    );
    const { sent, answeredByFront } = await differential(p);
    expect(answeredByFront).toBeGreaterThan(sent * 0.8);
  });

  test('the same with environments: configured keys of each, keys the upstream is asked about, a project view', async () => {
    const p = await pair(
      'environments',
      envUpstream,
      {
        flagsApiToken: `${UP_DEV},${UP_PROD}`,
        clientKeys: ['plain-key', 'dev-key@development', 'prod-key@production'],
      },
      ['authorization', 'x-api-key'],
      {
        good: ['plain-key', 'dev-key', 'prod-key', FE_DEV, FE_SHOP],
        bad: [BE_DEV, '*:development.unknown-1', 'dev-key@development', SERVER_TOKEN, 'Bearer'],
      },
    );
    const { sent, answeredByFront } = await differential(p);
    expect(answeredByFront).toBeGreaterThan(sent * 0.8);
  });

  test('through the listener no request reaches Express, good or refused, and each is counted under the same route label', async () => {
    const p = await pair('routing', upstream, {}, ['authorization', 'x-api-key']);
    const post = (body: string, headers: Record<string, string>) =>
      both(p, {
        path: '/ofrep/v1/evaluate/flags',
        headers: {
          host: 'flags.example',
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          ...headers,
        },
        body: [Buffer.from(body)],
        keepAlive: false,
      });
    const context = '{"context":{"targetingKey":"u1"}}';

    const [ok, okExpress] = await post(context, { authorization: `Bearer ${CLIENT_KEY}` });
    expect(ok.status).toBe(200);
    expect(ok).toEqual(okExpress);
    const answer = JSON.parse(ok.body) as { flags: { key: string }[]; eventStreams: { url: string }[] };
    expect(answer.flags.map((f) => f.key)).toEqual(expect.arrayContaining(['everyone', 'by-user']));
    expect(answer.eventStreams[0].url).toMatch(
      /^http:\/\/flags\.example\/ofrep\/v1\/flag-changes\?token=.+&since=.+$/,
    );
    const [notModified] = await post(context, {
      authorization: CLIENT_KEY,
      'if-none-match': String(ok.headers.etag),
    });
    expect(notModified.status).toBe(304);
    expect(p.listener.routed).toEqual([]);

    // the front's too: a key in X-API-Key only, bad JSON, an invalid context, a wrong key
    const [apiKey] = await post(context, { 'x-api-key': CLIENT_KEY });
    expect(apiKey).toEqual(ok);
    const [badJson] = await post('{"context":', { authorization: CLIENT_KEY });
    expect(badJson.status).toBe(400);
    expect(JSON.parse(badJson.body)).toMatchObject({ errorCode: 'PARSE_ERROR' });
    const [invalid] = await post('{"context":{"properties":"x"}}', { authorization: CLIENT_KEY });
    expect(invalid.status).toBe(400);
    expect(JSON.parse(invalid.body)).toMatchObject({ errorCode: 'INVALID_CONTEXT' });
    const [wrong] = await post(context, { authorization: 'wrong' });
    expect(wrong).toMatchObject({ status: 401, body: '' });
    expect(p.listener.routed).toEqual([]);

    const counts = await requestCounts(p.listener.app);
    expect(counts).toEqual(await requestCounts(p.express.app));
    expect(counts).toEqual(
      expect.arrayContaining([
        'flags_proxy_http_requests_total{method="POST",route="/ofrep/v1/evaluate/flags",status="200"} 2',
        'flags_proxy_http_requests_total{method="POST",route="/ofrep/v1/evaluate/flags",status="304"} 1',
        'flags_proxy_http_requests_total{method="POST",route="/ofrep/v1/evaluate/flags",status="400"} 2',
        'flags_proxy_http_requests_total{method="POST",route="unmatched",status="401"} 1',
      ]),
    );
  });
});
