/**
 * The front's POST of the evaluation endpoints through the two ways in: a server's listener
 * (`app.listener`, as `start()` serves: Node's request, no Express in front) and the Express app (a
 * proxy with `trustProxy`, whose listener is the Express app: without forwarding headers the context
 * is the same). For random and malformed bodies, content types and lengths, each answer is checked
 * against an expectation written here from docs/api.md: the order of checks (401 → 415 → 413 → 400,
 * then 501 for the disabled `/proxy/all`), the error body (`{id, name, message}`, JSON), and for a
 * 200 the toggles a plain `unleash-client` evaluates for the context the docs describe ("Context":
 * numbers and booleans as strings, other root fields as properties, the socket's address). Both ways
 * in also give each other's status, body and headers, and through the listener no request reaches
 * Express's router: the front answers every one itself, good bodies and refused ones alike.
 */
import { contentTypeArb } from '../../support/body-requests';
import http from 'node:http';
import fc from 'fast-check';
import type { Context } from 'unleash-client';
import type { ProxyApp } from '../../../src/proxy/app';
import { referenceSdk } from '../../support/reference-sdk';
import { LoopbackServers } from '../../support/listen';
import { CLIENT_KEY, expressRouted, readyProxyFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

const RUNS = Number(process.env.POST_RUNS ?? 150);
jest.setTimeout(120_000);

const MAX_BODY = 2048;

const payload: FeaturesPayload = {
  version: 2,
  features: [
    { name: 'everyone', enabled: true, strategies: [{ name: 'default' }] },
    { name: 'off', enabled: false, strategies: [{ name: 'default' }] },
    {
      name: 'some-users',
      enabled: true,
      strategies: [
        { name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'userId', groupId: 'g' } },
      ],
      variants: [
        { name: 'a', weight: 500, stickiness: 'userId', payload: { type: 'string', value: 'A' } },
        { name: 'b', weight: 500, stickiness: 'userId' },
      ],
    },
    {
      name: 'pro-plan',
      enabled: true,
      strategies: [
        { name: 'default', constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }] },
      ],
    },
    {
      name: 'by-user',
      enabled: true,
      strategies: [{ name: 'userWithId', parameters: { userIds: 'u1,u2' } }],
    },
  ],
};

const upstream = new TestUpstream(payload);
const servers = new LoopbackServers();
const apps: ProxyApp[] = [];
let listenerUrl = '';
let expressUrl = '';
/** Requests that reached Express's router through the listener of the first proxy. */
let routed: string[] = [];

beforeAll(async () => {
  await upstream.start();
  const front = await readyProxyFor(upstream, { maxBodySize: MAX_BODY });
  const express = await readyProxyFor(upstream, { maxBodySize: MAX_BODY, trustProxy: true });
  expect(express.listener).toBe(express);
  apps.push(front, express);
  routed = expressRouted(front);
  listenerUrl = await servers.listen(front.listener);
  expressUrl = await servers.listen(express);
});
afterAll(async () => {
  await servers.closeAll();
  await Promise.all(apps.map((a) => a.close()));
  await upstream.stop();
});
beforeEach(() => {
  routed.length = 0;
});

interface Sent {
  path: string;
  headers: Record<string, string>;
  /** Written as these pieces, one write each. */
  body: Buffer[];
  /** The body as text (for the oracle). */
  raw?: string;
}

interface Got {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const PER_CONNECTION = new Set(['date', 'connection', 'keep-alive']);

function send(base: string, sent: Sent): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${sent.path}`, { method: 'POST', headers: sent.headers, agent: false });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const headers: Got['headers'] = {};
        for (const [name, value] of Object.entries(res.headers))
          if (!PER_CONNECTION.has(name)) headers[name] = value;
        // an error's id is new for every answer
        const body = Buffer.concat(chunks)
          .toString('utf8')
          .replace(/"id":"[0-9a-f-]{36}"/, '"id":"…"');
        resolve({ status: res.statusCode ?? 0, headers, body });
      });
    });
    req.on('error', reject);
    for (const piece of sent.body) req.write(piece);
    req.end();
  });
}

/** Both proxies' answers to the same request. */
async function both(sent: Sent): Promise<[Got, Got]> {
  return [
    await within(send(listenerUrl, sent), 'the listener'),
    await within(send(expressUrl, sent), 'Express'),
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

const contextArb = fc.record(
  {
    userId: fc.oneof(fc.constantFrom('u1', 'u2', 'u3', ''), fc.string({ maxLength: 12 }), fc.integer()),
    sessionId: fc.string({ maxLength: 8 }),
    appName: fc.constantFrom('web', 'ios'),
    properties: fc.oneof(
      fc.record({ plan: fc.constantFrom('pro', 'free') }),
      fc.dictionary(
        fc.string({ maxLength: 6 }),
        fc.oneof(fc.string({ maxLength: 6 }), fc.integer(), fc.boolean()),
      ),
      fc.constant(null),
      fc.constant('not-an-object'),
    ),
    currentTime: fc.constantFrom('2024-01-01T00:00:00.000Z', 'not a date'),
  },
  { requiredKeys: [] },
);

const bodyArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: contextArb.map((context) => JSON.stringify({ context })) },
  {
    weight: 2,
    arbitrary: fc
      .record({
        context: contextArb,
        toggles: fc.oneof(
          fc.array(fc.constantFrom('everyone', 'off', 'nope', 'by-user')),
          fc.constant('x'),
          fc.array(fc.integer()),
        ),
      })
      .map((b) => JSON.stringify(b)),
  },
  { weight: 2, arbitrary: fc.json() },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '{',
      '{"context":',
      'null',
      '"text"',
      '[]',
      '[1,2]',
      '{}',
      '\ufeff{"context":{"userId":"u1"}}',
      '{"context":{"userId":"u1"}} trailing',
      '{"context":{"userId":"u1","userId":"u2"}}',
      '{"context":{"__proto__":{"userId":"u1"}}}',
      '{"toggles":["everyone"],"extra":1}',
      `{"context":{"userId":"${'x'.repeat(MAX_BODY)}"}}`,
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
);

const sentArb: fc.Arbitrary<Sent> = fc
  .record({
    body: bodyArb,
    contentType: contentTypeArb(8),
    path: fc.constantFrom('/proxy', '/proxy', '/proxy', '/api/frontend', '/proxy?x=1', '/proxy/all'),
    key: fc.constantFrom(CLIENT_KEY, CLIENT_KEY, CLIENT_KEY, 'wrong', undefined),
    ifNoneMatch: fc.boolean(),
    split: fc.boolean(),
    framing: fc.constantFrom('length', 'length', 'length', 'chunked', 'gzip-labelled'),
    origin: fc.constantFrom(undefined, 'https://app.example'),
  })
  .map(({ body, contentType, path, key, split, framing, origin }) => {
    const bytes = Buffer.from(body);
    const headers: Record<string, string> = {};
    if (contentType !== '') headers['content-type'] = contentType;
    if (key !== undefined) headers.authorization = key;
    if (origin !== undefined) headers.origin = origin;
    if (framing === 'chunked') headers['transfer-encoding'] = 'chunked';
    else headers['content-length'] = String(bytes.length);
    if (framing === 'gzip-labelled') headers['content-encoding'] = 'identity';
    const half = Math.floor(bytes.length / 2);
    return {
      path,
      headers,
      body: split ? [bytes.subarray(0, half), bytes.subarray(half)] : [bytes],
      raw: body,
    };
  });

// ---- the oracle: what docs/api.md says each request gets ----------------------------------------

const sdk = referenceSdk(payload, { appName: 'flags-proxy', environment: 'default' });
const NAMES = payload.features.map((f) => (f as { name: string }).name).sort();
const ROOT_FIELDS = new Set([
  'userId',
  'sessionId',
  'appName',
  'environment',
  'currentTime',
  'remoteAddress',
]);
const NOT_DATA = new Set(['__proto__', 'constructor', 'prototype']);
const JSON_TYPES = new Set([
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset="utf-8"',
]);
const OTHER_TYPES = new Set([
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/vnd.api+json',
  '',
]);

/** What a request must get: one status (and for a 200 its toggles), or, where the docs do not fix it, one of some. */
type Expected =
  | { status: 200; toggles: unknown[] }
  | { status: 401 | 415 | 413 | 400 | 501; name: string }
  | { oneOf: number[]; why: string };

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const scalar = (v: unknown): v is string | number | boolean =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** The evaluation context docs/api.md "Context" builds from a valid `body.context`, or why it is refused. */
function contextOf(raw: unknown): Context | 'invalid' | 'unsure' {
  if (raw === undefined) return contextOf({}); // no context: the empty one
  if (!isRecord(raw)) return 'invalid';
  const context: Context = { environment: 'default', remoteAddress: '127.0.0.1', properties: {} };
  const properties: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (NOT_DATA.has(name)) return 'invalid';
    if (name === 'properties') {
      if (value === null) continue; // a null `properties` is none
      if (!isRecord(value)) return 'invalid';
      for (const [p, v] of Object.entries(value)) {
        if (NOT_DATA.has(p)) return 'invalid';
        if (!scalar(v)) return 'invalid';
        properties[p] = String(v);
      }
    } else if (value === null)
      continue; // a null field is absent
    else if (!scalar(value)) return 'invalid';
    else if (name === 'remoteAddress' || name === 'environment')
      continue; // the socket's; no FLAGS_ENVIRONMENT, but not drawn
    else if (ROOT_FIELDS.has(name)) (context as Record<string, unknown>)[name] = String(value);
    else return 'unsure'; // another root field becomes a property (drawn only by fc.json)
  }
  context.properties = properties;
  return context;
}

/** The toggles of a 200, as the plain SDK evaluates them (docs/api.md "Endpoints"). */
function togglesFor(context: Context, named: string[] | undefined): unknown[] {
  const toggle = (name: string) => {
    const answer = sdk(name, context);
    if (answer === 'threw') throw new Error(`the plain SDK threw on ${name}`);
    return { name, enabled: answer.enabled, impressionData: false, variant: answer.variant };
  };
  if (named) return [...new Set(named)].map(toggle);
  return NAMES.map(toggle).filter((t) => t.enabled);
}

/** A leading byte order mark is not part of the JSON text (RFC 8259 §8.1 lets a parser ignore it). */
const withoutBom = (raw: string) => raw.replace(/^\ufeff/, '');

function expectedFor(sent: Sent, raw: string): Expected {
  const key = sent.headers.authorization;
  if (key !== CLIENT_KEY) return { status: 401, name: 'AuthenticationRequired' };
  const type = (sent.headers['content-type'] ?? '').toLowerCase();
  if (OTHER_TYPES.has(type)) return { status: 415, name: 'ContentTypeError' };
  const size = Buffer.byteLength(raw);
  // a charset that is not a UTF is not JSON (RFC 8259 §8.1)
  if (type.includes('latin1')) return { status: 415, name: 'ContentTypeError' };
  if (size > MAX_BODY) return { status: 413, name: 'PayloadTooLarge' };
  // UTF-16 is read as UTF-16: UTF-8 text read so is not JSON, and one byte reads as no text at all,
  // an empty body (docs/api.md: a 400 saying so)
  if (type.includes('utf-16')) return { status: 400, name: 'ValidationError' };
  if (!JSON_TYPES.has(type)) throw new Error(`a content type this oracle does not know: ${type}`);
  const bad = { status: 400, name: 'ValidationError' } as const;
  // a key given twice: the docs do not say which one counts
  if (/"(\w+)":[^{}]*"\1":/.test(raw)) return { oneOf: [400, 200, 501], why: 'a key twice' };
  let body: unknown;
  try {
    body = JSON.parse(withoutBom(raw));
  } catch {
    return bad;
  }
  if (!isRecord(body)) return bad;
  const context = contextOf(body.context);
  if (context === 'invalid') return bad;
  const { toggles } = body;
  if (toggles !== undefined && !(Array.isArray(toggles) && toggles.every((t) => typeof t === 'string')))
    return bad;
  const others = Object.keys(body).filter((k) => k !== 'context' && k !== 'toggles');
  if (context === 'unsure' || others.length > 0)
    return { oneOf: [400, 200, 501], why: 'no context or another field' };
  if (sent.path === '/proxy/all') return { status: 501, name: 'EndpointDisabled' };
  return { status: 200, toggles: togglesFor(context, toggles as string[] | undefined) };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Checks one answer against what the request must get; a 200's toggles against the plain SDK always. */
function check(got: Got, expected: Expected, sent: Sent, raw: string, revalidated: boolean): void {
  const label = { path: sent.path, headers: sent.headers, body: raw.slice(0, 200) };
  if ('oneOf' in expected)
    expect({
      ...label,
      status: got.status,
      in: revalidated ? [...expected.oneOf, 304] : expected.oneOf,
    }).toEqual({
      ...label,
      status: got.status,
      in: expect.arrayContaining([got.status]) as unknown,
    });
  else if (revalidated && expected.status === 200) {
    expect({ ...label, status: got.status, body: got.body }).toEqual({ ...label, status: 304, body: '' });
    return;
  } else expect({ ...label, status: got.status }).toEqual({ ...label, status: expected.status });
  if (got.status === 200) {
    expect(got.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(got.headers.etag).toMatch(/^W\/"/);
    const toggles = (JSON.parse(got.body) as { toggles: unknown[] }).toggles;
    const text = (sent.headers['content-type'] ?? '').includes('utf-16') ? '{}' : withoutBom(raw);
    const body = JSON.parse(text) as { context?: unknown; toggles?: string[] };
    const context = contextOf(body.context);
    const oracle = togglesFor(
      typeof context === 'object' ? context : { environment: 'default', remoteAddress: '127.0.0.1' },
      body.toggles,
    );
    expect({ ...label, toggles }).toEqual({ ...label, toggles: oracle });
  } else if (got.status !== 304) {
    expect(got.headers['content-type']).toBe('application/json; charset=utf-8');
    const error = JSON.parse(
      got.body.replace('"id":"…"', `"id":"${'0'.repeat(8)}-0000-0000-0000-${'0'.repeat(12)}"`),
    ) as Record<string, unknown>;
    expect(Object.keys(error).sort()).toEqual(['id', 'message', 'name']);
    expect(error.id).toMatch(UUID);
    expect(typeof error.message).toBe('string');
    if (!('oneOf' in expected) && 'name' in expected)
      expect({ ...label, name: error.name }).toEqual({ ...label, name: expected.name });
  }
}

describe('POST through the front', () => {
  test("answers every request as docs/api.md says, with the plain SDK's toggles, the same through the listener and the Express app, for random and malformed bodies", async () => {
    await fc.assert(
      fc.asyncProperty(sentArb, fc.boolean(), async (sent, revalidate) => {
        const raw = sent.raw ?? '';
        const expected = expectedFor(sent, raw);
        let request = sent;
        let revalidated = false;
        if (revalidate) {
          const [first, firstExpress] = await both(sent);
          check(first, expected, sent, raw, false);
          check(firstExpress, expected, sent, raw, false);
          const etag = first.headers.etag;
          if (typeof etag === 'string') {
            request = { ...sent, headers: { ...sent.headers, 'if-none-match': etag } };
            revalidated = true;
          }
        }
        const [viaListener, viaExpress] = await both(request);
        check(viaListener, expected, request, raw, revalidated);
        check(viaExpress, expected, request, raw, revalidated);
        expect(viaListener).toEqual(viaExpress);
        expect(routed).toEqual([]);
      }),
      { numRuns: RUNS },
    );
  });

  test('through the listener no request reaches Express: a good body, a malformed one and an invalid one are the front’s', async () => {
    const ok = await send(listenerUrl, {
      path: '/proxy',
      headers: { 'content-type': 'application/json', authorization: CLIENT_KEY, 'content-length': '28' },
      body: [Buffer.from('{"context":{"userId":"u1"}}\n')],
    });
    expect(ok.status).toBe(200);
    const names = (JSON.parse(ok.body) as { toggles: { name: string }[] }).toggles.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['by-user', 'everyone']));
    expect(routed).toEqual([]);

    const bad = await send(listenerUrl, {
      path: '/proxy',
      headers: { 'content-type': 'application/json', authorization: CLIENT_KEY, 'content-length': '11' },
      body: [Buffer.from('{"context":')],
    });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body)).toMatchObject({ name: 'ValidationError' });
    const invalid = await send(listenerUrl, {
      path: '/proxy',
      headers: { 'content-type': 'application/json', authorization: CLIENT_KEY, 'content-length': '24' },
      body: [Buffer.from('{"context":{"userId":[]}')],
    });
    expect(invalid.status).toBe(400);
    expect(JSON.parse(invalid.body)).toMatchObject({ name: 'ValidationError' });
    expect(routed).toEqual([]);
  });
});
