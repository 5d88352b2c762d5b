/**
 * Random and malformed requests to OFREP's bulk path, and how one is sent and its answer read back,
 * for the differential test of the OFREP bulk endpoint through its two ways in (`front-bulk.test.ts`).
 */
import { contentTypeArb } from '../../support/body-requests';
import http from 'node:http';
import fc from 'fast-check';
import { CLIENT_KEY } from '../../support/proxy';
import type { FeaturesPayload } from '../../support/upstream';

export const SERVER_TOKEN = 'server-token-1';
export const MAX_BODY = 4096;
export const ALLOWED_ORIGIN = 'https://app.example';

/**
 * No toggle here is chance: every rollout and variant split is sticky on the user, and without one
 * the SDK's default stickiness falls back to the address (127.0.0.1 for both proxies).
 */
export const payload: FeaturesPayload = {
  version: 2,
  features: [
    { name: 'everyone', enabled: true, strategies: [{ name: 'default' }] },
    { name: 'off', enabled: false, strategies: [{ name: 'default' }] },
    {
      name: 'some-users',
      enabled: true,
      impressionData: true,
      strategies: [
        { name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'userId', groupId: 'g' } },
      ],
      variants: [
        { name: 'a', weight: 500, stickiness: 'userId', payload: { type: 'string', value: 'A' } },
        { name: 'b', weight: 500, stickiness: 'userId', payload: { type: 'json', value: '{"n":1}' } },
      ],
    },
    {
      name: 'pro-plan',
      enabled: true,
      strategies: [
        {
          name: 'default',
          constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }],
          variants: [
            { name: 'ten', weight: 1000, stickiness: 'default', payload: { type: 'number', value: '10' } },
          ],
        },
      ],
    },
    {
      name: 'by-user',
      enabled: true,
      strategies: [
        { name: 'userWithId', parameters: { userIds: 'u1,u2,42,true' } },
        { name: 'default', constraints: [{ contextName: 'region', operator: 'IN', values: ['eu'] }] },
      ],
    },
    {
      name: 'child',
      enabled: true,
      strategies: [],
      dependencies: [{ feature: 'by-user' }],
    },
    {
      name: 'broken-number',
      enabled: true,
      strategies: [{ name: 'default' }],
      variants: [
        { name: 'oops', weight: 1000, stickiness: 'default', payload: { type: 'number', value: 'x' } },
      ],
    },
  ],
};

export interface Sent {
  /** Under the proxy's base path. */
  path: string;
  headers: Record<string, string>;
  /** Written as these pieces, one write each. */
  body: Buffer[];
  /** A keep-alive connection shared with other requests, or a connection of its own. */
  keepAlive: boolean;
}

export interface Got {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Differ between any two answers, whichever way in. */
const PER_CONNECTION = new Set(['date', 'connection', 'keep-alive']);

/** Sends one request; a compressed body is compared as its bytes (base64), any other as text. */
export function send(base: string, sent: Sent, agent: http.Agent): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${sent.path}`, {
      method: 'POST',
      headers: sent.headers,
      agent: sent.keepAlive ? agent : false,
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const headers: Got['headers'] = {};
        for (const [name, value] of Object.entries(res.headers))
          if (!PER_CONNECTION.has(name)) headers[name] = value;
        const bytes = Buffer.concat(chunks);
        const body =
          res.headers['content-encoding'] === undefined
            ? // an error's id is new for every answer (the app's error shape; OFREP's has none)
              bytes.toString('utf8').replace(/"id":"[0-9a-f-]{36}"/, '"id":"…"')
            : bytes.toString('base64');
        resolve({ status: res.statusCode ?? 0, headers, body });
      });
    });
    req.on('error', reject);
    for (const piece of sent.body) req.write(piece);
    req.end();
  });
}

const targetingKeyArb = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('u1', 'u2', 'u3', '', '42') },
  { weight: 2, arbitrary: fc.string({ maxLength: 10 }) },
  { weight: 2, arbitrary: fc.oneof(fc.integer({ min: -5, max: 100 }), fc.boolean(), fc.constant(null)) },
  { weight: 1, arbitrary: fc.constantFrom({ id: 'u1' }, ['u1'], 1.5) },
);

const validContextArb = fc.record(
  {
    targetingKey: targetingKeyArb,
    userId: fc.oneof(fc.constantFrom('u1', 'u9'), fc.integer()),
    sessionId: fc.string({ maxLength: 8 }),
    appName: fc.constantFrom('web', 'ios'),
    plan: fc.constantFrom('pro', 'free'),
    region: fc.constantFrom('eu', 'us', ''),
    properties: fc.oneof(
      fc.record({ plan: fc.constantFrom('pro', 'free'), region: fc.constant('eu') }, { requiredKeys: [] }),
      fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(fc.string({ maxLength: 6 }), fc.integer())),
    ),
    currentTime: fc.constant('2024-01-01T00:00:00.000Z'),
  },
  { requiredKeys: [] },
);

/** A context with one field OFREP may refuse (or read its own way). */
const oddContextArb = fc
  .tuple(
    validContextArb,
    fc.constantFrom<[string, unknown]>(
      ['properties', null],
      ['properties', 'not-an-object'],
      ['nested', { a: 1 }],
      ['list', [1, 2]],
      ['empty', null],
      ['currentTime', 'not a date'],
      ['long', 'v'.repeat(1100)],
      ['', 'blank name'],
    ),
  )
  .map(([context, [name, value]]) => ({ ...context, [name]: value }));

const contextArb = fc.oneof(
  { weight: 4, arbitrary: validContextArb },
  { weight: 1, arbitrary: oddContextArb },
);

const bodyArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: contextArb.map((context) => JSON.stringify({ context })) },
  {
    weight: 1,
    arbitrary: fc
      .record({ context: fc.oneof(contextArb, fc.constantFrom(null, 'x', 1, [])), extra: fc.integer() })
      .map((b) => JSON.stringify(b)),
  },
  { weight: 1, arbitrary: contextArb.map((context) => JSON.stringify(context)) },
  { weight: 2, arbitrary: fc.json() },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '{',
      '{"context":',
      'null',
      '"text"',
      '1',
      'true',
      '[]',
      '[{"context":{}}]',
      '{}',
      ' {"context":{"targetingKey":"u1"}} ',
      '\ufeff{"context":{"targetingKey":"u1"}}',
      '{"context":{"targetingKey":"u1"}} trailing',
      '{"context":{"targetingKey":"u1","targetingKey":"u2"}}',
      '{"context":{"__proto__":{"targetingKey":"u1"}}}',
      '{"context":{"targetingKey":"u1","userId":"u2"}}',
      `{"context":{"properties":{${Array.from({ length: 120 }, (_, i) => `"p${i}":1`).join(',')}}}}`,
      `{"context":{"targetingKey":"${'x'.repeat(MAX_BODY)}"}}`,
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
);

/** Where a key may be sent: the configured header, and the other two OFREP reads. */
export type KeyHeaders = readonly string[];

/** Keys of one proxy: accepted ones and others (wrong, server-side tokens, malformed). */
export interface KeyChoice {
  good: readonly string[];
  bad: readonly string[];
}

export const SIMPLE_KEYS: KeyChoice = {
  good: [CLIENT_KEY],
  bad: ['wrong', SERVER_TOKEN, `${CLIENT_KEY}x`, '', ' ', 'Bearer'],
};

/** A key as clients send it, plain or as `Bearer` (any case, extra blanks), right or wrong. */
function keyValueArb(keys: KeyChoice): fc.Arbitrary<string> {
  const forms = (key: string): string[] => [key, `Bearer ${key}`, `bearer  ${key} `];
  return fc.oneof(
    { weight: 7, arbitrary: fc.constantFrom(...keys.good.flatMap(forms)) },
    { weight: 3, arbitrary: fc.constantFrom(...keys.bad.flatMap(forms)) },
  );
}

/**
 * Random requests to `{prefix}/ofrep/v1/evaluate/flags` (and a few paths next to it), with keys in
 * any of `keyHeaders` (the configured header first; each present or not, in any form), origins,
 * encodings, framings, hosts.
 */
export function sentArb(keyHeaders: KeyHeaders, keys: KeyChoice = SIMPLE_KEYS): fc.Arbitrary<Sent> {
  const keyValue = keyValueArb(keys);
  // the configured header (the first) present 7 times in 8, the others half the time (`freq`: 1 in freq is none)
  const keyArbs = keyHeaders.map((name, i) =>
    fc.option(
      keyValue.map((value): [string, string] => [name, value]),
      { freq: i === 0 ? 8 : 2 },
    ),
  );
  const keysArb = fc.tuple(...keyArbs).map((pairs) => pairs.filter((p): p is [string, string] => p !== null));
  const goodKeyArb = fc.constantFrom(...keys.good).map((key): [string, string] => [keyHeaders[0], key]);
  return fc
    .record({
      // about half the requests are what a provider sends (plain JSON, read by the body step itself), the rest anything
      plain: fc.boolean(),
      plainBody: validContextArb.map((context) => JSON.stringify({ context })),
      plainKey: goodKeyArb,
      body: bodyArb,
      contentType: contentTypeArb(12),
      path: fc.oneof(
        { weight: 10, arbitrary: fc.constant('/ofrep/v1/evaluate/flags') },
        {
          weight: 2,
          arbitrary: fc.constantFrom(
            '/ofrep/v1/evaluate/flags?flagConfigEtag=x',
            '/ofrep/v1/evaluate/flags/',
            '/OFREP/v1/evaluate/flags',
            '/ofrep/v1/evaluate/flags/everyone',
            '/ofrep/v1/evaluate',
          ),
        },
      ),
      keys: keysArb,
      split: fc.boolean(),
      framing: fc.constantFrom('length', 'length', 'length', 'length', 'chunked', 'identity-labelled'),
      origin: fc.constantFrom(undefined, undefined, ALLOWED_ORIGIN, 'https://elsewhere.example'),
      acceptEncoding: fc.constantFrom(undefined, 'gzip', 'gzip, deflate, br', 'identity', 'br;q=1, *;q=0'),
      host: fc.constantFrom('flags.example', 'flags.example:8443', 'localhost', '[::1]:3063'),
      ifNoneMatch: fc.constantFrom(undefined, undefined, undefined, '*', 'W/"nope"', '"x", W/"y"'),
      keepAlive: fc.boolean(),
    })
    .map((r) => {
      // a plain request: the configured header carries an accepted key, the others stay as drawn
      const path = r.plain ? '/ofrep/v1/evaluate/flags' : r.path;
      const contentType = r.plain ? 'application/json' : r.contentType;
      const framing = r.plain ? 'length' : r.framing;
      const keys = r.plain ? [r.plainKey, ...r.keys.filter(([name]) => name !== keyHeaders[0])] : r.keys;
      const bytes = Buffer.from(r.plain ? r.plainBody : r.body);
      // The stream URL in the answer names the request's host: the same Host to both proxies makes
      // the whole answer comparable (the token and `since` are the same for the same key and definitions).
      const headers: Record<string, string> = { host: r.host };
      if (contentType !== '') headers['content-type'] = contentType;
      for (const [name, value] of keys) headers[name] = value;
      if (r.origin !== undefined) headers.origin = r.origin;
      if (r.acceptEncoding !== undefined) headers['accept-encoding'] = r.acceptEncoding;
      if (r.ifNoneMatch !== undefined) headers['if-none-match'] = r.ifNoneMatch;
      if (framing === 'chunked') headers['transfer-encoding'] = 'chunked';
      else headers['content-length'] = String(bytes.length);
      if (framing === 'identity-labelled') headers['content-encoding'] = 'identity';
      const half = Math.floor(bytes.length / 2);
      return {
        path,
        headers,
        body: r.split ? [bytes.subarray(0, half), bytes.subarray(half)] : [bytes],
        keepAlive: r.keepAlive,
      };
    });
}
