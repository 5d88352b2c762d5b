/**
 * Fuzzing of everything a client controls, over real sockets against a real upstream on loopback:
 * query strings of GET /proxy, bodies of POST /proxy, and usage bodies of /proxy/client/metrics and
 * /proxy/client/register. Whatever is sent, the answer is one of the statuses a client may get (never
 * a 5xx), every error has the JSON error body of DESIGN.md, and afterwards the proxy still answers
 * the right toggles and still forwards valid usage upstream. Run counts are bounded so the file runs
 * in a few seconds.
 */
import http from 'node:http';
import fc from 'fast-check';
import type { ProxyApp } from '../../../src/proxy/app';
import { sampleFeatures } from '../../support/fixtures';
import { LoopbackServers } from '../../support/listen';
import { CLIENT_KEY, readyProxyFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

const ALLOWED = new Set([200, 202, 304, 400, 401, 413, 415]);
const ERROR_NAMES = new Set([
  'ValidationError',
  'AuthenticationRequired',
  'PayloadTooLarge',
  'ContentTypeError',
]);
const MAX_BODY = 16 * 1024;

let upstream: TestUpstream;
let app: ProxyApp;
let base: string;
const servers = new LoopbackServers();
const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

interface Answer {
  status: number;
  contentType: string;
  body: string;
}

/** Sends exactly the given path and body bytes (no URL normalisation on the way). */
function send(method: string, path: string, headers: Record<string, string>, body?: string | Buffer) {
  return new Promise<Answer>((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers['content-type'] ?? ''),
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The status is one a client may get, and an error carries exactly {id, name, message} as JSON. */
function expectClientAnswer(answer: Answer, what: string): void {
  if (!ALLOWED.has(answer.status)) {
    throw new Error(`${what}: HTTP ${answer.status} ${answer.body.slice(0, 300)}`);
  }
  if (answer.status < 400) return;
  expect(answer.contentType).toBe('application/json; charset=utf-8');
  const parsed = JSON.parse(answer.body) as Record<string, unknown>;
  expect(Object.keys(parsed).sort()).toEqual(['id', 'message', 'name']);
  expect(parsed.id).toMatch(/^[0-9a-f-]{36}$/);
  expect(ERROR_NAMES.has(String(parsed.name))).toBe(true);
  expect(typeof parsed.message).toBe('string');
}

/** Percent-encodes every UTF-8 byte of a string (lone surrogates become U+FFFD, as in a browser). */
const percentEncode = (s: string) =>
  [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');

const ODD_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'properties',
  'context',
  'toggles',
  'userId',
  'sessionId',
  'remoteAddress',
  'environment',
  'appName',
  'currentTime',
  'properties[__proto__]',
  'properties[constructor][prototype]',
  'properties[a][b]',
  'context[userId]',
  '',
];

const keyArb = fc.oneof(
  fc.constantFrom(...ODD_KEYS),
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 10 }),
);

/** Raw characters a request line may carry as they are (no controls, no space). */
const rawQueryChars = fc.string({
  unit: fc.constantFrom(...'abcXYZ019%[]&=+;,.:!$\'()*@/?~-_#"<>\\^`{|}'.split('')),
  maxLength: 30,
});

const queryArb = fc
  .array(
    fc.oneof(
      fc
        .tuple(keyArb, fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 20 })))
        .map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`),
      fc
        .tuple(fc.constantFrom(...ODD_KEYS), fc.string({ maxLength: 3000 }))
        .map(([k, v]) => `${k}=${percentEncode(v)}`),
      rawQueryChars,
      fc.constantFrom(
        '%',
        '%zz',
        '%ff%fe',
        '%C0%80',
        '%ED%A0%80',
        'a=%00',
        '&&&',
        '==',
        'properties=x',
        'currentTime=9e99',
      ),
    ),
    { maxLength: 12 },
  )
  .map((parts) => parts.join('&'));

/** JSON text with a value at the given depth, arrays and objects alternating. */
const deepJson = (depth: number) => `${'[{"a":'.repeat(depth)}1${'}]'.repeat(depth)}`;

/** An object as JSON text, keys written as given (so `__proto__` is an own key of the text). */
const objectText = (entries: Array<[string, unknown]>) =>
  `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`).join(',')}}`;

const jsonValueArb = fc.jsonValue({ maxDepth: 4 });
const contextFieldArb = fc.tuple(keyArb, fc.oneof(jsonValueArb, fc.string({ maxLength: 2000 })));

const proxyBodyArb: fc.Arbitrary<string> = fc.oneof(
  jsonValueArb.map((v) => JSON.stringify(v) ?? 'null'),
  fc.array(contextFieldArb, { maxLength: 10 }).map(objectText),
  fc
    .tuple(
      fc.array(contextFieldArb, { maxLength: 8 }),
      fc.array(fc.oneof(fc.string({ maxLength: 50 }), jsonValueArb), { maxLength: 20 }),
    )
    .map(([context, toggles]) => `{"context":${objectText(context)},"toggles":${JSON.stringify(toggles)}}`),
  fc
    .array(contextFieldArb, { maxLength: 6 })
    .map((props) => `{"userId":"u1","properties":${objectText(props)}}`),
  fc.integer({ min: 1, max: 4000 }).map(deepJson),
  fc.integer({ min: 1, max: MAX_BODY }).map((n) => `"${'x'.repeat(n)}"`),
  fc.string({ maxLength: 200 }),
  fc.constant(`{"userId":"${'y'.repeat(MAX_BODY * 2)}"}`),
);

const now = Date.now();
/** An app the fuzz posts to, whose valid counts must still arrive afterwards. */
const FUZZED_APP = 'fuzzed-app';
const instantArb = fc.oneof(
  fc.integer({ min: now - 86_400_000, max: now }),
  fc.integer({ min: now, max: 8.64e15 }),
  fc.constant(8.64e15),
  fc.integer({ min: now - 86_400_000, max: now }).map((ms) => new Date(ms).toISOString()),
  fc.double(),
  fc.constantFrom(
    0,
    -1,
    8.64e15,
    8.64e15 + 1,
    1e300,
    '',
    'yesterday',
    '+275760-09-13T00:00:00.000Z',
    '2020-02-30T25:00:00Z',
  ),
  jsonValueArb,
);
const countArb = fc.oneof(
  fc.nat({ max: 100 }),
  fc.constantFrom(-1, 1.5, Number.MAX_SAFE_INTEGER, 2 ** 60, '3', null),
  jsonValueArb,
);
const togglesArb = fc.oneof(
  fc
    .array(
      fc.tuple(
        keyArb,
        fc.record(
          {
            yes: countArb,
            no: countArb,
            variants: fc.oneof(
              fc.constant(undefined),
              fc.dictionary(keyArb, countArb, { maxKeys: 4 }),
              jsonValueArb,
            ),
          },
          { requiredKeys: [] },
        ),
      ),
      { maxLength: 6 },
    )
    .map(objectText),
  jsonValueArb.map((v) => JSON.stringify(v) ?? 'null'),
);
/** Nearly valid usage: known apps, plausible counts, and times from anywhere in the instant range. */
const nearValidMetricsArb = fc
  .record({
    appName: fc.constantFrom(FUZZED_APP, 'other-app'),
    times: fc.tuple(instantArb, instantArb),
    toggles: fc.array(
      fc.tuple(
        fc.constantFrom('always-on', 'plan-pro', 'unknown-toggle', '__proto__', 'constructor'),
        fc.record({ yes: fc.nat({ max: 5 }), no: fc.nat({ max: 5 }) }),
      ),
      { minLength: 1, maxLength: 3 },
    ),
  })
  .map(({ appName, times, toggles }) => {
    const [start, stop] =
      typeof times[0] === 'number' && typeof times[1] === 'number' && times[1] < times[0]
        ? [times[1], times[0]]
        : times;
    return `{"appName":"${appName}","instanceId":"i","bucket":{"start":${JSON.stringify(start) ?? 'null'},"stop":${JSON.stringify(stop) ?? 'null'},"toggles":${objectText(toggles)}}}`;
  });

const metricsBodyArb: fc.Arbitrary<string> = fc.oneof(
  nearValidMetricsArb,
  fc
    .record({
      appName: fc.oneof(fc.constant(FUZZED_APP), keyArb, jsonValueArb),
      instanceId: fc.oneof(fc.string({ maxLength: 20 }), jsonValueArb),
      environment: fc.oneof(fc.constant(undefined), fc.string({ maxLength: 20 }), jsonValueArb),
      start: instantArb,
      stop: instantArb,
      toggles: togglesArb,
    })
    .map(
      (m) =>
        `{"appName":${JSON.stringify(m.appName) ?? 'null'},"instanceId":${JSON.stringify(m.instanceId) ?? 'null'},` +
        `${m.environment === undefined ? '' : `"environment":${JSON.stringify(m.environment) ?? 'null'},`}` +
        `"bucket":{"start":${JSON.stringify(m.start) ?? 'null'},"stop":${JSON.stringify(m.stop) ?? 'null'},"toggles":${m.toggles}}}`,
    ),
  fc.array(contextFieldArb, { maxLength: 8 }).map(objectText),
  fc.integer({ min: 1, max: 4000 }).map(deepJson),
  fc.string({ maxLength: 100 }),
);
const registerBodyArb: fc.Arbitrary<string> = fc.oneof(
  fc
    .record(
      {
        appName: fc.oneof(keyArb, jsonValueArb),
        instanceId: fc.oneof(keyArb, jsonValueArb),
        sdkVersion: fc.oneof(fc.string({ maxLength: 300 }), jsonValueArb),
        strategies: fc.oneof(fc.array(fc.string({ maxLength: 300 }), { maxLength: 120 }), jsonValueArb),
        started: instantArb,
        interval: countArb,
      },
      { requiredKeys: [] },
    )
    .map((r) => JSON.stringify(r)),
  fc.array(contextFieldArb, { maxLength: 8 }).map(objectText),
);

const contentTypeArb = fc.constantFrom(
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/json; charset=latin1',
);

beforeAll(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
  // Like the flag server: a time that is not ISO 8601 with a four-digit year is refused with 400.
  upstream.usageStatus = (_path, body) => {
    const b = body as { bucket?: { start?: unknown; stop?: unknown }; started?: unknown };
    const times = [b.bucket?.start, b.bucket?.stop, b.started].filter((t) => t !== undefined);
    return times.some((t) => !/^\d{4}-\d\d-\d\dT/.test(String(t))) ? 400 : undefined;
  };
  app = await readyProxyFor(upstream, { metricsInterval: 3_600_000, maxBodySize: MAX_BODY });
  base = await servers.listen(app);
});

afterAll(async () => {
  agent.destroy();
  await servers.closeAll();
  await app.close();
  await upstream.stop();
});

const auth = (withKey: boolean): Record<string, string> => (withKey ? { authorization: CLIENT_KEY } : {});

test('GET /proxy with random query strings never answers a 5xx', async () => {
  await fc.assert(
    fc.asyncProperty(queryArb, fc.boolean(), async (query, withKey) => {
      const answer = await send('GET', `/proxy?${query}`, auth(withKey || query.length % 7 !== 0));
      expectClientAnswer(answer, `GET /proxy?${query.slice(0, 200)}`);
    }),
    { numRuns: 150 },
  );
});

test('POST /proxy with random bodies never answers a 5xx', async () => {
  await fc.assert(
    fc.asyncProperty(proxyBodyArb, contentTypeArb, fc.nat({ max: 9 }), async (body, contentType, k) => {
      const answer = await send('POST', '/proxy', { ...auth(k !== 0), 'content-type': contentType }, body);
      expectClientAnswer(answer, `POST /proxy ${body.slice(0, 200)}`);
    }),
    { numRuns: 150 },
  );
});

test('POST /proxy/client/metrics and /client/register with random bodies never answer a 5xx', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        metricsBodyArb.map((body) => ['/proxy/client/metrics', body] as const),
        registerBodyArb.map((body) => ['/proxy/client/register', body] as const),
      ),
      contentTypeArb,
      fc.nat({ max: 9 }),
      async ([path, body], contentType, k) => {
        const answer = await send('POST', path, { ...auth(k !== 0), 'content-type': contentType }, body);
        expectClientAnswer(answer, `POST ${path} ${body.slice(0, 200)}`);
      },
    ),
    { numRuns: 200 },
  );
  // Whatever was accepted is forwarded without an error that would stop the relay.
  await app.clientUsage.forwarder.flush();
});

test('afterwards the proxy answers the right toggles and still relays valid usage upstream', async () => {
  const answer = await send('GET', '/proxy?userId=alice', auth(true));
  expect(answer.status).toBe(200);
  const names = (JSON.parse(answer.body) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name);
  expect(names).toEqual(expect.arrayContaining(['always-on', 'for-alice', 'with-variants']));
  expect(names).not.toContain('switched-off');
  expect(names).not.toContain('plan-pro');

  const posted = await send(
    'POST',
    '/proxy',
    { ...auth(true), 'content-type': 'application/json' },
    JSON.stringify({ context: { userId: 'bob', properties: { plan: 'pro' } } }),
  );
  expect(posted.status).toBe(200);
  expect(
    (JSON.parse(posted.body) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name),
  ).toEqual(expect.arrayContaining(['for-alice', 'plan-pro']));

  const before = upstream.posted('/api/client/metrics').length;
  const metrics = await send(
    'POST',
    '/proxy/client/metrics',
    { ...auth(true), 'content-type': 'application/json' },
    JSON.stringify({
      appName: FUZZED_APP,
      instanceId: 'i',
      bucket: {
        start: new Date(now).toISOString(),
        stop: Date.now(),
        toggles: { 'always-on': { yes: 7, no: 1 } },
      },
    }),
  );
  expect(metrics.status).toBe(202);
  await app.clientUsage.forwarder.flush();
  const forwarded = upstream
    .posted('/api/client/metrics')
    .slice(before)
    .map(
      (r) => r.body as { appName: string; bucket: { toggles: Record<string, { yes: number; no: number }> } },
    )
    .filter((b) => b.appName === FUZZED_APP);
  expect(forwarded).toHaveLength(1);
  expect(forwarded[0].bucket.toggles).toEqual({ 'always-on': { yes: 7, no: 1, variants: {} } });
});
