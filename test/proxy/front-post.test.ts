/**
 * The front's POST of the evaluation endpoints through the two ways in: a server's listener
 * (`app.listener`, as `start()` serves: Node's request, no Express in front) and Express (a proxy
 * with `trustProxy`, whose listener is the Express app: without forwarding headers the context is
 * the same). For random and malformed bodies, content types and lengths both give the same status,
 * body and headers, and through the listener no request reaches Express's router: the front
 * answers every one itself, good bodies and refused ones alike.
 */
import { contentTypeArb } from '../support/body-requests';
import http from 'node:http';
import fc from 'fast-check';
import type { ProxyApp } from '../../src/proxy/app';
import { LoopbackServers } from '../support/listen';
import { CLIENT_KEY, expressRouted, readyProxyFor } from '../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../support/upstream';

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
    return { path, headers, body: split ? [bytes.subarray(0, half), bytes.subarray(half)] : [bytes] };
  });

describe('POST through the front', () => {
  test('answers every request through the listener as through Express: same status, body and headers, for random and malformed bodies', async () => {
    await fc.assert(
      fc.asyncProperty(sentArb, fc.boolean(), async (sent, revalidate) => {
        let request = sent;
        if (revalidate) {
          const [first] = await both(sent);
          const etag = first.headers.etag;
          if (typeof etag === 'string')
            request = { ...sent, headers: { ...sent.headers, 'if-none-match': etag } };
        }
        const [viaListener, viaExpress] = await both(request);
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
