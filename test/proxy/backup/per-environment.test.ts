import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { ClientFeaturesResponse } from 'unleash-client';
import type { FeatureInterface } from 'unleash-client/lib/feature';
import { silentLogger } from '../../../src/common/logging/logger';
import type { ProxyApp } from '../../../src/proxy/app';
import { backupPlace } from '../../../src/proxy/backup/backup-scope';
import { backupKey } from '../../../src/proxy/backup/create-backup';
import { upstreamTokens } from '../../../src/proxy/environments/upstream-tokens';
import { parseConfig } from '../../../src/proxy/config/parse-config';
import type { ProxyOptions } from '../../../src/proxy/config/types';
import { LoopbackServers } from '../../support/listen';
import { capturingLogger } from '../../support/logger';
import { proxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

/**
 * Backups are per environment: proxies of different environments sharing one Redis (and one key
 * prefix) or one storage provider never start from each other's definitions.
 */
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

const UP_DEV = '*:development.upstream-dev-secret';
const UP_PROD = '*:production.upstream-prod-secret';

const on = (name: string) => ({ name, enabled: true, project: 'default', strategies: [{ name: 'default' }] });
const DEV: FeaturesPayload = { version: 2, features: [on('dev-only-flag'), on('shared-flag')] };
const PROD: FeaturesPayload = { version: 2, features: [on('prod-only-flag'), on('shared-flag')] };

let redis: Redis;

/**
 * What one test runs against: its own key prefix and upstream, and the proxies and servers it
 * started. The tests that mostly wait for the SDK to give up on the upstream (a GET and two
 * retries, 1 s and 2 s apart) run concurrently, each with its own; Jest runs no *Each hooks for
 * them, so theirs are released in afterAll. The other tests get theirs in beforeEach.
 */
interface Setup {
  prefix: string;
  /** One URL serving the development token; the production token is refused (401) until a test adds it. */
  upstream: TestUpstream;
  apps: ProxyApp[];
  servers: LoopbackServers;
}

const setups: Setup[] = [];

async function setup(): Promise<Setup> {
  const ctx: Setup = {
    prefix: `flags-proxy-test:${randomUUID()}:`,
    upstream: await new TestUpstream(DEV, UP_DEV).start(),
    apps: [],
    servers: new LoopbackServers(),
  };
  setups.push(ctx);
  return ctx;
}

async function release(ctx: Setup): Promise<void> {
  setups.splice(setups.indexOf(ctx), 1);
  await ctx.servers.closeAll();
  await Promise.all(ctx.apps.splice(0).map((a) => a.close()));
  await ctx.upstream.stop();
  const keys = await redis.keys(`${ctx.prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
}

/** The context of the sequential test running now. */
let current: Setup;

beforeAll(() => {
  redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  for (const ctx of [...setups]) await release(ctx);
  await redis.quit();
});
beforeEach(async () => {
  current = await setup();
});
afterEach(async () => {
  await release(current);
});

async function proxy(
  { upstream, prefix, apps, servers }: Setup,
  token: string,
  key: string,
  options: ProxyOptions = {},
): Promise<{ app: ProxyApp; url: string }> {
  const app = proxyFor(upstream, {
    flagsApiToken: token,
    clientKeys: [key],
    redisUrl: REDIS_URL,
    redisKeyPrefix: prefix,
    refreshInterval: 100,
    ...options,
  });
  apps.push(app);
  return { app, url: await servers.listen(app) };
}

const backupKeys = async ({ prefix }: Setup): Promise<string[]> => (await redis.keys(`${prefix}*`)).sort();

/** A development proxy that synchronised and wrote its backup; gives the backup's key. */
async function developmentBackup(ctx: Setup): Promise<string> {
  const dev = await proxy(ctx, UP_DEV, 'dev-key');
  await dev.app.whenReady();
  await waitFor(async () => (await backupKeys(ctx)).length === 1);
  const [key] = await backupKeys(ctx);
  expect(await redis.get(key)).toContain('dev-only-flag');
  await dev.app.close();
  return key;
}

/** Records the Redis GETs of keys under this test's prefix (MONITOR sees every client's commands). */
async function watchReads({ prefix }: Setup): Promise<{ gets: string[]; stop: () => Promise<void> }> {
  const monitor = new Redis(REDIS_URL, { monitor: true });
  let watching = false;
  // Other tests send Redis commands meanwhile. ioredis takes the connection as monitoring only once
  // MONITOR's OK is handled, so lines read with that OK (commands sent before this watch began), and
  // lines still arriving once it is stopped, are each reported as a "Command queue state error":
  // those are ignored; any other error fails the test as an unhandled one would.
  monitor.on('error', (err: Error) => {
    if (!watching && err.message.startsWith('Command queue state error')) return;
    throw err;
  });
  await new Promise<void>((resolve) =>
    monitor.once('monitoring', () => {
      watching = true;
      resolve();
    }),
  );
  const gets: string[] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (args[0]?.toLowerCase() === 'get' && args[1]?.startsWith(prefix)) gets.push(args[1]);
  });
  return {
    gets,
    stop: async () => {
      watching = false;
      monitor.disconnect();
    },
  };
}

const toggles = async (url: string, key: string): Promise<{ status: number; names: string[] }> => {
  const res = await fetch(`${url}/proxy`, { headers: { Authorization: key } });
  if (res.status !== 200) return { status: res.status, names: [] };
  const body = (await res.json()) as { toggles: Array<{ name: string }> };
  return { status: res.status, names: body.toggles.map((t) => t.name).sort() };
};

// Jest runs the concurrent tests of one describe block together, and no other test meanwhile: the
// tests that wait out the SDK's retries are all at the top level (once in 'when the upstream' blocks).
const upstreamBreaks: Array<[string, (upstream: TestUpstream) => void]> = [
  ['refuses the production token (401)', () => undefined],
  [
    'is down (503 to every token, the production one known)',
    (upstream) => {
      upstream.addToken(UP_PROD, PROD);
      upstream.fault = { status: 503 };
    },
  ],
];

test.concurrent.each(upstreamBreaks)(
  "when the upstream %s: a production proxy sharing the Redis and prefix does not become ready from the development proxy's backup",
  async (_what, breakUpstream) => {
    const ctx = await setup();
    const { upstream } = ctx;
    const devKey = await developmentBackup(ctx);
    breakUpstream(upstream);
    const reads = await watchReads(ctx);
    try {
      const prod = await proxy(ctx, UP_PROD, 'prod-key');
      // It looked at Redis (after its first fetch failed) and looked again a second later: by then
      // a backup it could use would have made it ready.
      await waitFor(() => prod.app.features.isReady() || reads.gets.length >= 2, 15_000);
      expect(reads.gets.every((key) => key !== devKey)).toBe(true);
      expect((await fetch(`${prod.url}/proxy/health`)).status).toBe(503);
      expect(await toggles(prod.url, 'prod-key')).toEqual({ status: 503, names: [] });

      // Once the upstream answers it, it serves production's toggles: never development's.
      upstream.fault = undefined;
      upstream.addToken(UP_PROD, PROD);
      await waitFor(async () => (await toggles(prod.url, 'prod-key')).status === 200, 15_000);
      expect((await toggles(prod.url, 'prod-key')).names).toEqual(['prod-only-flag', 'shared-flag']);
    } finally {
      await reads.stop();
    }
  },
);

test.concurrent.each(upstreamBreaks)(
  'when the upstream %s: a production proxy becomes ready from a production backup in the same Redis and prefix',
  async (_what, breakUpstream) => {
    const ctx = await setup();
    const { upstream } = ctx;
    await developmentBackup(ctx);
    upstream.addToken(UP_PROD, PROD);
    const writer = await proxy(ctx, UP_PROD, 'prod-key');
    await writer.app.whenReady();
    await waitFor(async () => (await backupKeys(ctx)).length === 2);
    await writer.app.close();

    upstream.removeToken(UP_PROD);
    breakUpstream(upstream);
    const prod = await proxy(ctx, UP_PROD, 'prod-key');
    await prod.app.whenReady();
    expect((await fetch(`${prod.url}/proxy/health`)).status).toBe(200);
    expect(await toggles(prod.url, 'prod-key')).toEqual({
      status: 200,
      names: ['prod-only-flag', 'shared-flag'],
    });
  },
);

test('a lone token in another format keeps the backup key it always had', async () => {
  current.upstream.addToken('legacy-token', DEV);
  const legacy = await proxy(current, 'legacy-token', 'k');
  await legacy.app.whenReady();
  await waitFor(async () => (await backupKeys(current)).length === 1);
  expect(await backupKeys(current)).toEqual([backupKey(legacy.app.proxyConfig)]);
});

test("a storage provider shared by two proxies gives neither the other environment's definitions", async () => {
  const stored = new Map<string, ClientFeaturesResponse>();
  const storageProvider = {
    set: async (key: string, data: ClientFeaturesResponse) => void stored.set(key, data),
    get: async (key: string) => stored.get(key),
  };
  const { upstream } = current;
  const dev = await proxy(current, UP_DEV, 'dev-key', { redisUrl: undefined, storageProvider });
  await dev.app.whenReady();
  await waitFor(() => stored.size === 1);
  await dev.app.close();

  const prod = await proxy(current, UP_PROD, 'prod-key', { redisUrl: undefined, storageProvider });
  // the production token is refused: its first fetch failed, and it is still not ready
  await waitFor(
    () => upstream.featureRequests().filter((r) => r.headers.authorization === UP_PROD).length >= 2,
  );
  expect(prod.app.features.isReady()).toBe(false);
  expect((await fetch(`${prod.url}/proxy/health`)).status).toBe(503);
  expect(await toggles(prod.url, 'prod-key')).toEqual({ status: 503, names: [] });
  // what the development proxy stored is kept under its own key, apart from production's
  expect([...stored.keys()].every((key) => key.includes('development'))).toBe(true);
});

test('upstream tokens of other projects, or `[]:` tokens, get keys of their own that never show the token', () => {
  const config = parseConfig(
    {
      flagsUrl: current.upstream.url,
      flagsApiToken: UP_DEV,
      clientKeys: ['k'],
      redisUrl: REDIS_URL,
      redisKeyPrefix: current.prefix,
      logger: silentLogger,
    },
    {},
  );
  const keyOf = (token: string): string => {
    const [parsed] = upstreamTokens([token], undefined);
    const place = backupPlace(config, parsed, { index: 0, several: false });
    return backupKey({ ...config, redisKeyPrefix: place.redisKeyPrefix }, place.scope);
  };
  const keys = [
    '*:development.a-secret',
    'shop:development.a-secret',
    '[]:development.first-secret',
    '[]:development.second-secret',
    '*:production.a-secret',
  ].map(keyOf);
  expect(new Set(keys).size).toBe(keys.length);
  // the same environment and projects share one backup, whichever token reads them
  expect(keyOf('*:development.another-secret')).toBe(keys[0]);
  expect(keys.join()).not.toMatch(/secret/);
});

test.concurrent(
  'in a proxy of several tokens, each environment starts from its own backup only, whichever proxy wrote it',
  async () => {
    const ctx = await setup();
    const { upstream } = ctx;
    await developmentBackup(ctx);
    upstream.addToken(UP_PROD, PROD);
    upstream.fault = { status: 503 };
    const both = await proxy(ctx, `${UP_DEV},${UP_PROD}`, 'unused', {
      clientKeys: ['dev-key@development', 'prod-key@production'],
    });
    await waitFor(async () => (await fetch(`${both.url}/proxy/health`)).status === 200, 15_000);
    expect(await toggles(both.url, 'dev-key')).toEqual({
      status: 200,
      names: ['dev-only-flag', 'shared-flag'],
    });
    expect(await toggles(both.url, 'prod-key')).toEqual({ status: 503, names: [] });
  },
);

test("a bootstrap is the first upstream token's environment's: another environment never starts from it", async () => {
  // the upstream knows both tokens, and is down
  const { upstream } = current;
  upstream.addToken(UP_PROD, PROD);
  upstream.fault = { status: 503 };
  const both = await proxy(current, `${UP_DEV},${UP_PROD}`, 'unused', {
    redisUrl: undefined,
    clientKeys: ['dev-key@development', 'prod-key@production'],
    expBootstrap: { data: [on('bootstrapped-flag') as FeatureInterface] },
  });
  await waitFor(async () => (await fetch(`${both.url}/proxy/health`)).status === 200, 15_000);
  expect(await toggles(both.url, 'dev-key')).toEqual({ status: 200, names: ['bootstrapped-flag'] });
  await waitFor(
    () => upstream.featureRequests().filter((r) => r.headers.authorization === UP_PROD).length >= 1,
  );
  expect(await toggles(both.url, 'prod-key')).toEqual({ status: 503, names: [] });
});

test.concurrent(
  'a production record copied over the development key is ignored and named once, however often it is read again: development stays 503',
  async () => {
    const ctx = await setup();
    const { upstream } = ctx;
    const devKey = await developmentBackup(ctx);
    upstream.addToken(UP_PROD, PROD);
    const writer = await proxy(ctx, UP_PROD, 'prod-key');
    await writer.app.whenReady();
    await waitFor(async () => (await backupKeys(ctx)).length === 2);
    await writer.app.close();
    const prodKey = (await backupKeys(ctx)).find((key) => key !== devKey) ?? '';
    const production = (await redis.get(prodKey)) ?? '';
    expect(production).toContain('prod-only-flag');
    await redis.set(devKey, production);

    upstream.fault = { status: 503 };
    const reads = await watchReads(ctx);
    try {
      const logger = capturingLogger();
      const dev = await proxy(ctx, UP_DEV, 'dev-key', { logger });
      await waitFor(() => reads.gets.filter((key) => key === devKey).length >= 3, 20_000);
      const named = logger.lines.filter((l) => l.msg.includes('holds the definitions of'));
      expect(named).toHaveLength(1);
      expect(named[0]).toMatchObject({ level: 'warn' });
      expect(named[0].msg).toBe(
        'Redis backup: ignoring the backup in Redis: it holds the definitions of environment "production", projects *, not this backup\'s environment "development", projects *',
      );
      expect(await toggles(dev.url, 'dev-key')).toEqual({ status: 503, names: [] });
    } finally {
      await reads.stop();
    }
  },
);

test.concurrent(
  'validated frontend tokens are kept in the Redis backup as digests and serve keys after a restart with the upstream down; an unseen token is not served; once the upstream answers, a kept token it revoked is refused',
  async () => {
    const ctx = await setup();
    const { upstream } = ctx;
    const FRONT = '*:development.redis-kept-frontend-secret';
    const UNSEEN = '*:development.redis-unseen-frontend-secret';
    upstream.knownTokens.set(FRONT, { type: 'frontend', environment: 'development', projects: ['*'] });
    upstream.knownTokens.set(UNSEEN, { type: 'frontend', environment: 'development', projects: ['*'] });
    const first = await proxy(ctx, UP_DEV, 'unused');
    await first.app.whenReady();
    const answered = await toggles(first.url, FRONT);
    expect(answered).toEqual({ status: 200, names: ['dev-only-flag', 'shared-flag'] });
    const digest = createHash('sha256').update(`flags-proxy validated token\n${FRONT}`).digest('hex');
    await waitFor(async () => {
      const [key] = await backupKeys(ctx);
      return key !== undefined && ((await redis.get(key)) ?? '').includes(digest);
    });
    const [key] = await backupKeys(ctx);
    expect(await redis.get(key)).not.toContain('secret');
    await first.app.close();

    upstream.fault = { status: 503 };
    upstream.validateFault = { status: 503 };
    const second = await proxy(ctx, UP_DEV, 'unused');
    await waitFor(async () => (await fetch(`${second.url}/proxy/health`)).status === 200, 15_000);
    expect(await toggles(second.url, FRONT)).toEqual(answered);
    expect((await toggles(second.url, UNSEEN)).status).toBe(503);

    // the upstream is back and has revoked the kept token: its first answer has the kept token asked about again
    upstream.knownTokens.delete(FRONT);
    upstream.fault = undefined;
    upstream.validateFault = undefined;
    await waitFor(async () => (await toggles(second.url, UNSEEN)).status === 200, 15_000);
    await waitFor(async () => (await toggles(second.url, FRONT)).status === 401, 15_000);
  },
);
