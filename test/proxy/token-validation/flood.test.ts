import { randomBytes } from 'node:crypto';
import type { ProxyApp } from '../../../src/proxy/app';
import type { ProxyOptions } from '../../../src/proxy/config/types';
import { LoopbackServers } from '../../support/listen';
import { proxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

// Validation of unknown Unleash tokens under floods, over real sockets against a loopback upstream
// that answers /edge/validate as Unleash 8.2 does (413 for a body over 100 KB).

const UP_DEV = '*:development.upstream-dev-secret';
const DEV: FeaturesPayload = {
  version: 2,
  features: [{ name: 'dev-flag', enabled: true, project: 'default', strategies: [{ name: 'default' }] }],
};
/** express.json()'s default limit, which Unleash keeps: `100kb`. */
const UNLEASH_BODY_LIMIT = 100 * 1024;

/** A token-shaped key of a held environment, as long as a token may be: the upstream must be asked. */
const junk = (): string => `*:development.${randomBytes(372).toString('base64url')}`;
const fresh = (i: number): string => `*:development.fresh-valid-${i}-${randomBytes(8).toString('hex')}`;

let upstream: TestUpstream;
const apps: ProxyApp[] = [];
const servers = new LoopbackServers();

beforeEach(async () => {
  upstream = await new TestUpstream(DEV, UP_DEV).start();
  upstream.validateBodyLimit = UNLEASH_BODY_LIMIT;
});

afterEach(async () => {
  await servers.closeAll();
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await upstream.stop();
});

async function serve(options: ProxyOptions = {}): Promise<{ app: ProxyApp; url: string }> {
  const app = proxyFor(upstream, { flagsApiToken: UP_DEV, clientKeys: ['dev-key'], ...options });
  apps.push(app);
  await app.whenReady();
  return { app, url: await servers.listen(app) };
}

const status = (url: string, key: string, signal?: AbortSignal): Promise<Response> =>
  fetch(`${url}/proxy`, { headers: { Authorization: key }, signal });

test('fresh valid tokens are served (never 401) amid floods of long junk tokens, and no validation body exceeds Unleash’s 100 KB', async () => {
  const { url } = await serve();
  expect(junk().length).toBe(510);
  const junkStatuses = new Map<number, number>();
  const valid: Array<{ status: number; retryAfter: string | null }> = [];
  let flooded = 0;
  // waves of 300 distinct junk tokens from concurrent clients, fresh valid tokens among them
  for (let wave = 0; wave < 5; wave++) {
    const keys = Array.from({ length: 300 }, junk);
    const fresh2 = [fresh(2 * wave), fresh(2 * wave + 1)];
    for (const token of fresh2)
      upstream.knownTokens.set(token, { type: 'frontend', environment: 'development', projects: ['*'] });
    keys.splice(100, 0, fresh2[0]);
    keys.splice(200, 0, fresh2[1]);
    await Promise.all(
      keys.map(async (key) => {
        const res = await status(url, key);
        await res.arrayBuffer();
        if (fresh2.includes(key))
          valid.push({ status: res.status, retryAfter: res.headers.get('retry-after') });
        else {
          junkStatuses.set(res.status, (junkStatuses.get(res.status) ?? 0) + 1);
          flooded += 1;
        }
      }),
    );
  }
  expect(valid.map((v) => v.status)).toEqual(valid.map(() => 200));
  // junk is refused on the upstream's word (401) or shed by a bound (503), nothing else
  expect([...junkStatuses.keys()].filter((s) => s !== 401 && s !== 503)).toEqual([]);
  expect(junkStatuses.get(401) ?? 0).toBeGreaterThan(0);
  // what reached the upstream: batches, none over its limit (so none refused with 413)
  const calls = upstream.validationCalls();
  expect(Math.max(...upstream.validateBodySizes)).toBeLessThanOrEqual(96 * 1024);
  expect(Math.max(...calls.map((c) => c.length))).toBeLessThanOrEqual(200);
  expect(calls.length).toBeLessThan(flooded / 10);
}, 120_000);

test('a 413 of the upstream splits the batch: every token still gets the upstream’s own answer', async () => {
  const { url } = await serve();
  // an upstream with a smaller limit than Unleash's: the first batch is refused with 413
  upstream.validateBodyLimit = 8 * 1024;
  const tokens = Array.from({ length: 60 }, (_, i) => (i % 10 === 0 ? fresh(i) : junk()));
  for (const [i, token] of tokens.entries())
    if (i % 10 === 0)
      upstream.knownTokens.set(token, { type: 'frontend', environment: 'development', projects: ['*'] });
  const statuses = await Promise.all(tokens.map(async (t) => (await status(url, t)).status));
  expect(statuses).toEqual(tokens.map((_, i) => (i % 10 === 0 ? 200 : 401)));
  // answered (not 413) bodies all fit the upstream's limit; every token was answered about
  const calls = upstream.validationCalls();
  const answered = calls.filter((_, i) => upstream.validateBodySizes[i] <= 8 * 1024);
  expect(answered.flat().sort()).toEqual([...tokens].sort());
  expect(upstream.validateBodySizes.some((size) => size > 8 * 1024)).toBe(true);
}, 60_000);

test('a hanging /edge/validate: waiters per token are bounded (503, Retry-After, never 401) and disconnected clients stop being waited for', async () => {
  const { app, url } = await serve();
  const validator = app.tokenValidator;
  if (!validator) throw new Error('validation is on');
  upstream.validateHang = true;

  // 600 requests for one pending token: 500 wait, the others get 503 with Retry-After at once
  const token = fresh(0);
  upstream.knownTokens.set(token, { type: 'frontend', environment: 'development', projects: ['*'] });
  const controller = new AbortController();
  const answered: Array<{ status: number; retryAfter: string | null }> = [];
  const same = Array.from({ length: 600 }, () =>
    status(url, token, controller.signal).then(
      async (res) => {
        await res.arrayBuffer();
        answered.push({ status: res.status, retryAfter: res.headers.get('retry-after') });
      },
      () => undefined,
    ),
  );
  await waitFor(() => validator.waiters === 500 && answered.length === 100, 30_000);
  expect(answered.map((a) => a.status)).toEqual(answered.map(() => 503));
  expect(answered.every((a) => a.retryAfter !== null && Number(a.retryAfter) >= 1)).toBe(true);
  controller.abort();
  await Promise.all(same);
  await waitFor(() => validator.waiters === 0, 30_000);
  expect(answered.length).toBe(100);

  // rounds of 100 clients with distinct tokens that go away while the upstream hangs
  let maxWaiters = 0;
  for (let round = 0; round < 10; round++) {
    const gone = new AbortController();
    let responses = 0;
    const clients = Array.from({ length: 100 }, () =>
      status(url, junk(), gone.signal).then(
        () => (responses += 1),
        () => undefined,
      ),
    );
    await waitFor(() => validator.waiters === 100, 30_000);
    maxWaiters = Math.max(maxWaiters, validator.waiters);
    gone.abort();
    await Promise.all(clients);
    await waitFor(() => validator.waiters === 0, 30_000);
    expect(responses).toBe(0);
  }
  expect(maxWaiters).toBe(100);
  // every client that went was dropped as it went (not by a time limit), and queued tokens with it
  expect(validator.abandoned).toBe(500 + 1000);
  expect(validator.pendingTokens.queued).toBe(0);
  const metrics = await (
    await fetch(`${url}/proxy/internal-backstage/prometheus`, { headers: { Authorization: 'dev-key' } })
  ).text();
  expect(metrics).toMatch(/^flags_proxy_token_validation_waiters 0$/m);
  expect(metrics).toMatch(/^flags_proxy_token_validation_pending_tokens\{state="queued"\} 0$/m);
  expect(metrics).toMatch(/^flags_proxy_token_validation_abandoned_total 1500$/m);
}, 120_000);

test('an upstream that cannot answer gives 503 with Retry-After on OFREP and /api/frontend too, never 401, and nothing is remembered', async () => {
  const { url } = await serve();
  upstream.validateFault = { status: 502, body: 'bad gateway' };
  const token = fresh(0);
  upstream.knownTokens.set(token, { type: 'frontend', environment: 'development', projects: ['*'] });
  const ofrep = () =>
    fetch(`${url}/ofrep/v1/evaluate/flags`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ context: { targetingKey: 'u1' } }),
    });
  const frontend = () => fetch(`${url}/api/frontend`, { headers: { Authorization: token } });
  for (const res of [await ofrep(), await frontend()]) {
    expect(res.status).toBe(503);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await res.text()).not.toContain(token);
  }
  upstream.validateFault = undefined;
  await waitFor(async () => (await ofrep()).status === 200);
  expect((await frontend()).status).toBe(200);
});

describe('fairness between callers of the validation queue', () => {
  /** `/edge/validate`'s status and `Retry-After` (status 0: the connection failed). */
  const edgeValidate = (
    url: string,
    tokens: string[],
  ): Promise<{ status: number; retryAfter: string | null }> =>
    fetch(`${url}/edge/validate`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ tokens }),
    }).then(
      async (res) => {
        await res.arrayBuffer();
        return { status: res.status, retryAfter: res.headers.get('retry-after') };
      },
      () => ({ status: 0, retryAfter: null }),
    );

  test('a flood of /edge/validate batches never pushes out a frontend request’s key: the caller holding most queued tokens is shed', async () => {
    // a budget past the flood: the queue's fairness alone keeps the key
    const { app, url } = await serve({ edgeValidateTokensPerSecond: 100_000 });
    const validator = app.tokenValidator;
    if (!validator) throw new Error('validation is on');
    let release = (): void => undefined;
    upstream.validateHold = new Promise((resolve) => (release = resolve));
    // tokens as long as real ones, 250 of them within the endpoint's 100 KiB body
    const batch = (): string[] =>
      Array.from({ length: 250 }, () => `*:development.${randomBytes(32).toString('hex')}`);
    const edge: Array<Promise<{ status: number; retryAfter: string | null }>> = [];

    // two batches take both call slots (200 tokens each, held by the upstream)
    edge.push(edgeValidate(url, batch()));
    await waitFor(() => validator.pendingTokens.sent === 200, 30_000);
    edge.push(edgeValidate(url, batch()));
    await waitFor(() => validator.pendingTokens.sent === 400, 30_000);

    // a frontend request's fresh valid key queues behind them
    const token = fresh(0);
    upstream.knownTokens.set(token, { type: 'frontend', environment: 'development', projects: ['*'] });
    let frontendStatus: number | undefined;
    const frontend = status(url, token).then(async (res) => {
      frontendStatus = res.status;
      return { status: res.status, body: await res.text() };
    });
    await waitFor(() => validator.pendingTokens.queued === 101, 30_000);

    // six more batches: 1,601 tokens for 1,000 places
    for (let i = 0; i < 6; i++) edge.push(edgeValidate(url, batch()));
    await waitFor(() => validator.shed === 601, 30_000);
    expect(validator.pendingTokens.queued).toBe(1000);
    expect(frontendStatus).toBeUndefined();

    release();
    const answered = await frontend;
    expect(answered.status).toBe(200);
    expect(JSON.parse(answered.body)).toMatchObject({ toggles: [{ name: 'dev-flag' }] });
    const statuses = await Promise.all(edge);
    // the batches that lost tokens are told to come back; the first two kept theirs
    expect(statuses.slice(0, 2).map((s) => s.status)).toEqual([200, 200]);
    expect(statuses.filter((s) => s.status === 503).length).toBeGreaterThan(0);
    expect(statuses.every((s) => s.status === 200 || (s.status === 503 && s.retryAfter !== null))).toBe(true);
  }, 60_000);
});
