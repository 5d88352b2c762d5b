import { request } from 'node:http';
import { createApp, type ProxyApp } from '../../../src/proxy/app';
import type { ProxyOptions } from '../../../src/proxy/config/types';
import { silentLogger } from '../../../src/common/logging/logger';
import { LoopbackServers } from '../../support/listen';
import { proxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

// What an instance below this one asks of it: POST /edge/validate and POST /api/client/metrics/bulk,
// over real sockets against a loopback upstream that answers /edge/validate as Unleash does.

const UPSTREAM = '*:development.upstream-secret-0123456789abcdef';
const PRETRUSTED = '*:development.pretrusted-frontend-0123456789';
const FRONTEND = '*:development.frontend-known-upstream-0123';
const SHOP_CLIENT = 'shop:development.shop-client-0123456789abcdef';
const OTHER_ENV = '*:production.frontend-of-production-0123';
const PAYLOAD: FeaturesPayload = {
  version: 2,
  features: [{ name: 'shop-flag', enabled: true, project: 'shop', strategies: [{ name: 'default' }] }],
};

let upstream: TestUpstream;
const apps: ProxyApp[] = [];
const servers = new LoopbackServers();

beforeEach(async () => {
  upstream = await new TestUpstream(PAYLOAD, UPSTREAM).start();
  upstream.knownTokens.set(FRONTEND, { type: 'frontend', environment: 'development', projects: ['*'] });
  upstream.knownTokens.set(SHOP_CLIENT, { type: 'client', environment: 'development', projects: ['shop'] });
  upstream.knownTokens.set(OTHER_ENV, { type: 'frontend', environment: 'production', projects: ['*'] });
});

afterEach(async () => {
  await servers.closeAll();
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await upstream.stop();
});

async function serve(options: ProxyOptions = {}): Promise<{ app: ProxyApp; url: string }> {
  const app = proxyFor(upstream, { flagsApiToken: UPSTREAM, clientKeys: [PRETRUSTED], ...options });
  apps.push(app);
  await app.whenReady();
  return { app, url: await servers.listen(app) };
}

const postJson = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

test('/edge/validate confirms the tokens this instance would serve, configured or confirmed upstream in one call, and leaves the others out', async () => {
  const { url } = await serve();
  const res = await postJson(`${url}/edge/validate`, {
    tokens: [
      PRETRUSTED,
      FRONTEND,
      SHOP_CLIENT,
      UPSTREAM,
      '*:development.made-up-token-000000000000',
      OTHER_ENV, // the upstream knows it, but no upstream token here holds production
      'not-an-unleash-token',
      FRONTEND,
    ],
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(await res.json()).toEqual({
    tokens: [
      {
        token: PRETRUSTED,
        type: 'frontend',
        environment: 'development',
        projects: ['*'],
        status: 'Validated',
      },
      { token: FRONTEND, type: 'frontend', environment: 'development', projects: ['*'], status: 'Validated' },
      {
        token: SHOP_CLIENT,
        type: 'client',
        environment: 'development',
        projects: ['shop'],
        status: 'Validated',
      },
      { token: UPSTREAM, type: 'client', environment: 'development', projects: ['*'], status: 'Validated' },
    ],
  });
  // the unknown tokens of a held environment went upstream together, the others not at all
  const calls = upstream.validationCalls();
  expect(calls).toHaveLength(1);
  expect([...calls[0]].sort()).toEqual(
    [FRONTEND, SHOP_CLIENT, '*:development.made-up-token-000000000000'].sort(),
  );
  // asked again: answered from what is remembered, no new call
  const again = await postJson(`${url}/edge/validate`, {
    tokens: [FRONTEND, '*:development.made-up-token-000000000000'],
  });
  expect((await again.json()) as unknown).toEqual({
    tokens: [
      { token: FRONTEND, type: 'frontend', environment: 'development', projects: ['*'], status: 'Validated' },
    ],
  });
  expect(upstream.validationCalls()).toHaveLength(1);
});

test('/edge/validate refuses more than 250 tokens (400), a body over 100 KiB (413) and a body that is not JSON (415), before asking anyone', async () => {
  const { url } = await serve();
  const many = Array.from({ length: 251 }, (_, i) => `*:development.token-${i}`);
  const tooMany = await postJson(`${url}/edge/validate`, { tokens: many });
  expect(tooMany.status).toBe(400);
  expect(await tooMany.json()).toMatchObject({
    name: 'ValidationError',
    message: expect.stringContaining('250'),
  });
  const big = await postJson(`${url}/edge/validate`, { tokens: [`*:development.${'x'.repeat(110 * 1024)}`] });
  expect(big.status).toBe(413);
  const notJson = await fetch(`${url}/edge/validate`, { method: 'POST', body: 'tokens=a' });
  expect(notJson.status).toBe(415);
  const wrongShape = await postJson(`${url}/edge/validate`, { tokens: 'a' });
  expect(wrongShape.status).toBe(400);
  expect(upstream.validationCalls()).toEqual([]);
});

test('/edge/validate answers 503 with Retry-After, never a refusal, while the upstream cannot answer', async () => {
  const { url } = await serve();
  upstream.validateFault = { status: 500 };
  const res = await postJson(`${url}/edge/validate`, { tokens: [PRETRUSTED, FRONTEND] });
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(await res.json()).toMatchObject({ name: 'NotReady' });
  upstream.validateFault = undefined;
  await waitFor(async () => {
    const ok = await postJson(`${url}/edge/validate`, { tokens: [FRONTEND] });
    return ok.status === 200 && ((await ok.json()) as { tokens: unknown[] }).tokens.length === 1;
  });
});

/** `/edge/validate` from a chosen loopback address (a client of its own). */
function postFrom(
  localAddress: string,
  url: string,
  tokens: string[],
): Promise<{ status: number; retryAfter: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/edge/validate`,
      { method: 'POST', localAddress, headers: { 'Content-Type': 'application/json' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: res.headers['retry-after'],
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ tokens }));
  });
}

test('/edge/validate has a budget of tokens per address: guessing a short configured token through it is refused with 429 and Retry-After past the budget', async () => {
  const SHORT = '*:development.qrs'; // a server-side SDK token with a 3-letter secret
  const { url } = await serve({
    expServerSideSdkConfig: { tokens: [SHORT] },
    edgeValidateTokensPerSecond: 1,
  });
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  const guesses: string[] = [];
  for (const a of letters)
    for (const b of letters) for (const c of letters) guesses.push(`*:development.${a}${b}${c}`);
  expect(guesses).toHaveLength(17_576);
  const answers: Array<{ status: number; retryAfter: string | undefined; body: string }> = [];
  for (let i = 0; i < guesses.length; i += 250)
    answers.push(await postFrom('127.0.0.1', url, guesses.slice(i, i + 250)));
  expect(answers).toHaveLength(71);
  // the first request spends the address's budget; the other 70 are refused, the token not found
  expect(answers[0].status).toBe(200);
  expect(answers.slice(1).map((a) => a.status)).toEqual(answers.slice(1).map(() => 429));
  expect(answers.some((a) => a.body.includes(SHORT))).toBe(false);
  for (const [i, refused] of answers.slice(1).entries()) {
    // the seconds until the budget holds the request's tokens (250, the last request 76)
    const asked = Math.min(250, guesses.length - (i + 1) * 250);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(asked - 1);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(asked);
    expect(JSON.parse(refused.body)).toEqual({
      id: expect.any(String),
      name: 'TooManyRequests',
      message: expect.stringContaining('at most 1 a second'),
    });
  }
  // no guess reached the upstream past the budget
  expect(upstream.validationCalls().flat().length).toBeLessThanOrEqual(250);
  // another address has its own budget
  const other = await postFrom('127.0.0.2', url, [SHORT]);
  expect(other.status).toBe(200);
  expect(JSON.parse(other.body)).toEqual({
    tokens: [
      { token: SHORT, type: 'client', environment: 'development', projects: ['*'], status: 'Validated' },
    ],
  });
}, 60_000);

test('the /edge/validate budget is an option with a maximum', () => {
  const make = (value: string) => () =>
    createApp(
      {},
      {
        FLAGS_URL: upstream.url,
        FLAGS_API_TOKEN: UPSTREAM,
        FLAGS_PROXY_CLIENT_KEYS: 'k',
        FLAGS_EDGE_VALIDATE_TOKENS_PER_SECOND: value,
      },
    );
  expect(make('100001')).toThrow(/FLAGS_EDGE_VALIDATE_TOKENS_PER_SECOND.*from 1 to 100000/);
  expect(make('0')).toThrow(/FLAGS_EDGE_VALIDATE_TOKENS_PER_SECOND.*from 1 to 100000/);
});

test('/edge/validate is served under the base path', async () => {
  const { url } = await serve({ proxyBasePath: 'edge' });
  const res = await postJson(`${url}/edge/edge/validate`, { tokens: [PRETRUSTED] });
  expect(res.status).toBe(200);
  expect(((await res.json()) as { tokens: unknown[] }).tokens).toHaveLength(1);
  expect((await postJson(`${url}/edge/validate`, { tokens: [PRETRUSTED] })).status).toBe(404);
});

const hour = (offsetHours: number): string => {
  const at = new Date(Date.now() - offsetHours * 3_600_000);
  at.setUTCMinutes(0, 0, 0);
  return at.toISOString();
};

test('bulk metrics from a downstream instance are summed per app and forwarded upstream with this instance’s token', async () => {
  const { app, url } = await serve();
  const res = await postJson(
    `${url}/api/client/metrics/bulk`,
    {
      applications: [
        {
          appName: 'checkout',
          instanceId: 'pod-1',
          environment: 'development',
          sdkVersion: 'unleash-client-node:6.0.0',
          strategies: ['default'],
          started: hour(2),
          interval: 15000,
          connectVia: [{ appName: 'edge', instanceId: 'e1' }],
        },
      ],
      metrics: [
        {
          featureName: 'shop-flag',
          appName: 'checkout',
          environment: 'development',
          timestamp: hour(1),
          yes: 3,
          no: 1,
          variants: { blue: 2 },
        },
        {
          featureName: 'shop-flag',
          appName: 'checkout',
          environment: 'development',
          timestamp: hour(0),
          yes: 2,
          no: 0,
          variants: {},
        },
        {
          featureName: '__proto__',
          appName: 'checkout',
          environment: 'development',
          timestamp: hour(0),
          yes: 1,
          no: 0,
        },
        {
          featureName: 'shop-flag',
          appName: 'checkout',
          environment: 'production',
          timestamp: hour(0),
          yes: 100,
          no: 100,
        },
      ],
    },
    { Authorization: SHOP_CLIENT },
  );
  expect(res.status).toBe(202);
  await app.clientUsage.forwarder.flush();
  const metrics = upstream.posted('/api/client/metrics');
  expect(metrics).toHaveLength(1);
  expect(metrics[0].headers.authorization).toBe(UPSTREAM);
  expect(metrics[0].body).toMatchObject({
    appName: 'checkout',
    environment: 'development',
    bucket: {
      start: hour(1),
      stop: hour(0),
      toggles: { 'shop-flag': { yes: 5, no: 1, variants: { blue: 2 } } },
    },
  });
  const toggles = (metrics[0].body as { bucket: { toggles: Record<string, unknown> } }).bucket.toggles;
  expect(Object.prototype.hasOwnProperty.call(toggles, '__proto__')).toBe(true);
  const registrations = upstream
    .posted('/api/client/register')
    .filter((r) => (r.body as { appName: string }).appName === 'checkout');
  expect(registrations).toHaveLength(1);
  expect(registrations[0].body).toMatchObject({
    appName: 'checkout',
    instanceId: 'pod-1',
    strategies: ['default'],
  });
});

test('bulk metrics need a client token (401) and are refused whole when an entry is invalid (400)', async () => {
  const { app, url } = await serve();
  const body = {
    applications: [],
    metrics: [
      { featureName: 'f', appName: 'a', environment: 'development', timestamp: hour(0), yes: 1, no: 0 },
    ],
  };
  expect((await postJson(`${url}/api/client/metrics/bulk`, body)).status).toBe(401);
  expect((await postJson(`${url}/api/client/metrics/bulk`, body, { Authorization: PRETRUSTED })).status).toBe(
    401,
  );
  const bad = await postJson(
    `${url}/api/client/metrics/bulk`,
    { metrics: [...body.metrics, { ...body.metrics[0], yes: -1 }] },
    { Authorization: SHOP_CLIENT },
  );
  expect(bad.status).toBe(400);
  expect(await bad.json()).toMatchObject({
    name: 'ValidationError',
    message: expect.stringContaining('metrics.1'),
  });
  const badTime = await postJson(
    `${url}/api/client/metrics/bulk`,
    { metrics: [...body.metrics, { ...body.metrics[0], timestamp: 'yesterday' }] },
    { Authorization: SHOP_CLIENT },
  );
  expect(badTime.status).toBe(400);
  await app.clientUsage.forwarder.flush();
  expect(upstream.posted('/api/client/metrics')).toEqual([]);
});

test('a flood of junk tokens through /edge/validate reaches the upstream only in bounded batches, and a real token is still confirmed after it', async () => {
  // a budget past the flood: the validation queue's bounds alone
  const { url } = await serve({ edgeValidateTokensPerSecond: 100_000 });
  const junk = (r: number, i: number) => `*:development.junk-${r}-${i}-${'x'.repeat(300)}`;
  const answers = await Promise.all(
    Array.from({ length: 8 }, (_, r) =>
      postJson(`${url}/edge/validate`, { tokens: Array.from({ length: 250 }, (_, i) => junk(r, i)) }),
    ),
  );
  for (const answer of answers) {
    expect([200, 503]).toContain(answer.status);
    const body = (await answer.json()) as { tokens?: unknown[] };
    if (answer.status === 200) expect(body.tokens).toEqual([]);
  }
  for (const call of upstream.validationCalls()) expect(call.length).toBeLessThanOrEqual(200);
  for (const size of upstream.validateBodySizes) expect(size).toBeLessThanOrEqual(96 * 1024);
  await waitFor(async () => {
    const res = await postJson(`${url}/edge/validate`, { tokens: [FRONTEND] });
    return res.status === 200 && ((await res.json()) as { tokens: unknown[] }).tokens.length === 1;
  });
});

test('an instance below keeps to the /edge/validate budget of the instance above: a revalidation round answered 429 waits as told and finishes', async () => {
  // 100 a second (250 at once): two calls of 200 in a row fit only 1.5 s apart
  const { url: upper } = await serve({ edgeValidateTokensPerSecond: 100 });
  const tokens = Array.from({ length: 400 }, (_, i) => `*:development.chained-${i}-0123456789abcdef`);
  for (const token of tokens)
    upstream.knownTokens.set(token, { type: 'frontend', environment: 'development', projects: ['*'] });
  const lower = createApp(
    {
      flagsUrl: `${upper}/api`,
      flagsApiToken: UPSTREAM,
      clientKeys: ['lower-key'],
      refreshInterval: 200,
      metricsInterval: 60_000,
      logger: silentLogger,
    },
    {},
  );
  apps.push(lower);
  await lower.whenReady();
  const validator = lower.tokenValidator;
  if (!validator) throw new Error('validation is on');
  // the lower instance learns the 400 tokens (past the upper's budget: some asked again later)
  await waitFor(async () => {
    await Promise.all(tokens.map((t) => validator.check(t)));
    return validator.acceptedTokens().length === 400;
  }, 30_000);

  const before = { ...validator.callResults };
  await validator.revalidate();
  // two batches of 200 are more than the upper's budget holds: at least one 429, then both answered
  expect(validator.callResults.failed - before.failed).toBeGreaterThanOrEqual(1);
  expect(validator.callResults.answered - before.answered).toBe(2);
  expect(validator.acceptedTokens()).toHaveLength(400);
}, 60_000);
