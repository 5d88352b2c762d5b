/**
 * The front's OFREP bulk endpoint through its two ways in: a server's listener (`app.listener`, as
 * `start()` serves: Node's request, no Express in front) and the Express app (a proxy with
 * `trustProxy`): random and malformed requests to `POST {prefix}/ofrep/v1/evaluate/flags` (contexts,
 * targetingKey forms, bodies, content types, lengths and framings, keys right and wrong in each
 * header OFREP reads and as `Bearer`, origins, gzip, hosts, If-None-Match and revalidation with the
 * ETag just returned).
 *
 * Each answer is checked against docs/openfeature.md and docs/api.md, written here: no accepted key
 * is a 401 (a server-side token 403) without a body, the path without an endpoint a 404, 415/413 in
 * the proxy's error body, 400 in OFREP's (`PARSE_ERROR`, `INVALID_CONTEXT`); a provider's request (an
 * accepted key in the configured header, plain JSON) gets a 400 `INVALID_CONTEXT` for a context the
 * docs refuse, else every flag of the key's definitions as the OFREP oracle (test/support/ofrep-oracle.ts:
 * the docs' mapping over a plain `unleash-client`) answers it. Both ways in also give each other's
 * status, headers and body and count the same requests under the same route labels (only the
 * connection's headers, `Date`, `Connection`, `Keep-Alive`, and an error's `id` differ). Through the
 * listener no request to the endpoint reaches Express's router: the front answers every one itself.
 */
import http from 'node:http';
import zlib from 'node:zlib';
import type { Context } from 'unleash-client';
import fc from 'fast-check';
import type { ProxyApp } from '../../../src/proxy/app';
import type { ProxyOptions } from '../../../src/proxy/config/types';
import { LoopbackServers } from '../../support/listen';
import { ofrepOracle, type Feature } from '../../support/ofrep-oracle';
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
  /** The definitions an accepted key sees (docs/openfeature.md: the key's environment and projects). */
  definitions: (key: string) => Feature[];
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
  definitions: (key: string) => Feature[] = () => payload.features as Feature[],
): Promise<Pair> {
  return {
    name,
    prefix: options.proxyBasePath ?? '',
    keyHeaders,
    keys,
    definitions,
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

// ---- the oracle: what docs/openfeature.md says a provider's request gets ----------------------

const NOT_DATA = new Set(['__proto__', 'constructor', 'prototype']);
const ROOT = new Set(['appName', 'environment', 'sessionId', 'currentTime', 'userId']);
const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const scalar = (v: unknown): v is string | number | boolean =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** The accepted key in the configured header (`<key>` or `Bearer <key>`, any case, blanks around). */
function configuredKey(p: Pair, sent: Sent): string | undefined {
  const raw = sent.headers[p.keyHeaders[0]];
  if (raw === undefined) return undefined;
  const key = raw
    .trim()
    .replace(/^bearer\s+/i, '')
    .trim();
  return p.keys.good.includes(key) ? key : undefined;
}

/**
 * The evaluation contexts docs/openfeature.md builds from a request's `context`: targetingKey is
 * the userId (it wins), other scalar fields are properties, numbers and booleans strings; `invalid`
 * for a nested value, a name that is not data or a field given twice; several candidates where the
 * docs leave a reading open (an empty or null targetingKey, a null field).
 */
function ofrepContexts(raw: unknown): Context[] | 'invalid' | 'unsure' {
  if (!isRecord(raw)) return 'invalid';
  // docs/api.md "Limits": values of at most 1,024 characters, at most 100 properties
  const values = [...Object.values(raw), ...(isRecord(raw.properties) ? Object.values(raw.properties) : [])];
  if (values.some((v) => typeof v === 'string' && v.length > 1024)) return 'invalid';
  if (isRecord(raw.properties) && Object.keys(raw.properties).length > 100) return 'invalid';
  // a field without a name: the docs do not say
  if ('' in raw || (isRecord(raw.properties) && '' in raw.properties)) return 'unsure';
  const root: Record<string, string> = {};
  const properties: Record<string, string> = {};
  let open = false;
  for (const [name, value] of Object.entries(raw)) {
    if (NOT_DATA.has(name)) return 'invalid';
    if (name === 'properties') {
      if (value === null) {
        open = true;
        continue;
      }
      if (!isRecord(value)) return 'invalid';
      for (const [k, v] of Object.entries(value)) {
        if (NOT_DATA.has(k) || !scalar(v)) return 'invalid';
        properties[k] = String(v);
      }
    } else if (value === null) open = true;
    else if (!scalar(value)) return 'invalid';
    else if (name === 'targetingKey' || ROOT.has(name)) root[name] = String(value);
  }
  for (const [name, value] of Object.entries(raw))
    if (name !== 'properties' && name !== 'targetingKey' && !ROOT.has(name) && scalar(value)) {
      if (name in properties) return 'invalid';
      properties[name] = String(value);
    }
  const base = { properties, remoteAddress: '127.0.0.1' };
  const { targetingKey, userId, ...others } = root;
  const candidates: Context[] = [];
  if (targetingKey) candidates.push({ ...others, ...base, userId: targetingKey });
  if (!targetingKey || open) {
    candidates.push({ ...others, ...base, userId });
    candidates.push({ ...others, ...base });
  }
  return candidates;
}

/**
 * Checks a provider's request (a key the pair accepts in the configured header, plain JSON, the
 * bulk path, a JSON object with a `context`) against docs/openfeature.md: 400 `INVALID_CONTEXT`
 * for a context it refuses, else 200 (304 to `If-None-Match: *`) whose flags are the oracle's for
 * the key's definitions. Gives false when the request is not such a request (nothing checked).
 */
function checkProvider(p: Pair, sent: Sent, got: Got): boolean {
  const key = configuredKey(p, sent);
  // a leading byte order mark is not part of the JSON text (RFC 8259 §8.1 lets a parser ignore it)
  const text = Buffer.concat(sent.body)
    .toString('utf8')
    .replace(/^\ufeff/, '');
  if (
    key === undefined ||
    sent.headers['content-type'] !== 'application/json' ||
    sent.headers['transfer-encoding'] !== undefined ||
    sent.headers['content-encoding'] !== undefined ||
    sent.path !== '/ofrep/v1/evaluate/flags' ||
    Buffer.byteLength(text) > MAX_BODY
  )
    return false;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    expect({ text, status: got.status }).toEqual({ text, status: 400 });
    expect(JSON.parse(got.body)).toMatchObject({ errorCode: 'PARSE_ERROR' });
    return true;
  }
  if (!isRecord(body) || Object.keys(body).some((k) => k !== 'context') || /"(\w+)":[^{}]*"\1":/.test(text))
    return false; // another shape: checked between the two ways in only
  const contexts = ofrepContexts(body.context ?? {});
  if (contexts === 'unsure') return false;
  if (contexts === 'invalid') {
    expect({ text, status: got.status }).toEqual({ text, status: 400 });
    expect(JSON.parse(got.body)).toMatchObject({ errorCode: 'INVALID_CONTEXT' });
    return true;
  }
  if (got.status === 304 && sent.headers['if-none-match'] !== undefined) {
    expect(got.body).toBe('');
    return true;
  }
  expect({ text, status: got.status }).toEqual({ text, status: 200 });
  const answer = (
    got.headers['content-encoding'] === undefined
      ? JSON.parse(got.body)
      : JSON.parse(gunzipOrBrotli(got.body, String(got.headers['content-encoding'])))
  ) as { flags: unknown[]; eventStreams?: { url: string }[] };
  const features = p.definitions(key);
  const readings = contexts.map((context) => {
    const oracle = ofrepOracle(features, [], context);
    // every flag of the key's definitions, by key
    return features
      .map((f) => f.name)
      .sort()
      .map((name) => oracle(name));
  });
  // one of the readings the docs allow, and exactly that one's flags
  const matching = readings.find((r) => {
    try {
      expect(answer.flags).toEqual(r);
      return true;
    } catch {
      return false;
    }
  });
  expect({ text, flags: answer.flags }).toEqual({ text, flags: matching ?? readings[0] });
  return true;
}

function gunzipOrBrotli(base64: string, encoding: string): string {
  const bytes = Buffer.from(base64, 'base64');
  if (encoding === 'gzip') return zlib.gunzipSync(bytes).toString('utf8');
  if (encoding === 'br') return zlib.brotliDecompressSync(bytes).toString('utf8');
  if (encoding === 'deflate') return zlib.inflateSync(bytes).toString('utf8');
  throw new Error(`an encoding the request did not ask for: ${encoding}`);
}

/** Checks what docs/openfeature.md fixes for any request: refusals and their bodies. */
function checkAny(p: Pair, sent: Sent, got: Got): void {
  const candidates = p.keyHeaders.map((h) => sent.headers[h]).filter((v) => v !== undefined);
  const anyGood = candidates.some((v) => p.keys.good.some((k) => v.includes(k)));
  // no endpoint there: OFREP's paths answer 404 whatever the key
  if (sent.path.toLowerCase().split('?')[0] === '/ofrep/v1/evaluate') {
    expect({ path: sent.path, status: got.status }).toEqual({ path: sent.path, status: 404 });
    expect(JSON.parse(got.body)).toMatchObject({ name: 'NotFoundError' });
    return;
  }
  // no accepted key anywhere: 401 (a server-side token 403), without a body
  if (!anyGood) {
    expect({ headers: sent.headers, status: got.status, body: got.body }).toEqual({
      headers: sent.headers,
      status: candidates.some((v) => v.includes(SERVER_TOKEN)) ? expect.any(Number) : 401,
      body: '',
    });
    expect([401, 403]).toContain(got.status);
  }
  if (got.status === 401 || got.status === 403) expect(got.body).toBe('');
  if (got.status === 304) expect(sent.headers['if-none-match']).toBeDefined();
  if (got.status === 415 || got.status === 413) {
    const error = JSON.parse(got.body) as Record<string, unknown>;
    expect(Object.keys(error).sort()).toEqual(['id', 'message', 'name']);
    expect(error.name).toBe(got.status === 415 ? 'ContentTypeError' : 'PayloadTooLarge');
  }
  if (got.status === 400 && got.headers['content-encoding'] === undefined) {
    const error = JSON.parse(got.body) as Record<string, unknown>;
    expect(['PARSE_ERROR', 'INVALID_CONTEXT']).toContain(error.errorCode);
    expect(typeof error.errorDetails).toBe('string');
  }
}

/** Runs the differential on one pair; gives how many requests the front answered without Express. */
async function differential(p: Pair): Promise<{ sent: number; answeredByFront: number }> {
  let sent = 0;
  /** Answers checked against the oracle in full (a provider's requests). */
  let checked = 0;
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
      checkAny(p, asked, viaListener);
      if (checkProvider(p, asked, viaListener)) checked += 1;
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
  // about half the requests are a provider's: those are checked against the oracle in full
  expect(checked).toBeGreaterThan(RUNS / 4);
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
      (key) => {
        const dev = DEV.features as Feature[];
        if (key === 'prod-key') return PROD.features as Feature[];
        if (key === FE_SHOP) return dev.filter((f) => (f as { project?: string }).project === 'shop');
        return dev; // plain-key: the first token's environment
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
