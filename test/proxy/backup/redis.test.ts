import { createHash, randomUUID } from 'node:crypto';
import net, { type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { backupKey } from '../../../src/proxy/backup/create-backup';
import type { ProxyOptions } from '../../../src/proxy/config/types';
import { sampleFeatures } from '../../support/fixtures';
import { capturingLogger } from '../../support/logger';
import { CLIENT_KEY, proxyFor, readyProxyFor, waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

// The tests that mostly wait for the SDK to give up on an upstream answering 503 (a GET and two
// retries, 1 s and 2 s apart) run concurrently: each has its own upstream, and its own key prefix
// with it. Jest runs no *Each hooks for them: what they start is released after the next sequential
// test or in afterAll. The tests that time the proxy run alone, as before.
let redis: Redis;
let prefix: string;
const prefixes: string[] = [];
const prefixOf = new Map<TestUpstream, string>();
const upstreams: TestUpstream[] = [];
const apps: ProxyApp[] = [];
const servers: Server[] = [];

function newPrefix(): string {
  const fresh = `flags-proxy-test:${randomUUID()}:`;
  prefixes.push(fresh);
  return fresh;
}

/** Closes every proxy, upstream and server started so far, and deletes their keys. */
async function release(): Promise<void> {
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await Promise.all(upstreams.splice(0).map((u) => u.stop()));
  for (const s of servers.splice(0)) s.close();
  prefixOf.clear();
  for (const used of prefixes.splice(0)) {
    const keys = await redis.keys(`${used}*`);
    if (keys.length > 0) await redis.del(...keys);
  }
}

beforeAll(() => {
  redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  await release();
  await redis.quit();
});
beforeEach(() => {
  prefix = newPrefix();
});
afterEach(release);

async function upstreamWith(payload = sampleFeatures()): Promise<TestUpstream> {
  const upstream = await new TestUpstream(payload).start();
  upstreams.push(upstream);
  prefixOf.set(upstream, newPrefix());
  return upstream;
}

/** A replica of `upstream`; the replicas of one upstream share their key prefix. */
function replica(upstream: TestUpstream, options: ProxyOptions = {}): ProxyApp {
  const app = proxyFor(upstream, {
    redisUrl: REDIS_URL,
    redisKeyPrefix: prefixOf.get(upstream) ?? prefix,
    ...options,
  });
  apps.push(app);
  return app;
}

const keyOf = (app: ProxyApp) => backupKey(app.proxyConfig);

const toggleNames = async (app: ProxyApp): Promise<string[]> => {
  const res = await request(app).get('/proxy').set('Authorization', CLIENT_KEY);
  expect(res.status).toBe(200);
  return (res.body as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name);
};

const metricsOf = async (app: ProxyApp): Promise<string> =>
  (await request(app).get('/proxy/internal-backstage/prometheus').set('Authorization', CLIENT_KEY)).text;

const onlyToggle = (name: string) => ({
  version: 2,
  features: [{ name, enabled: true, strategies: [{ name: 'default' }] }],
});

test.concurrent(
  'a replica whose upstream does not answer becomes ready from the backup another replica wrote, then switches to the upstream',
  async () => {
    const upstream = await upstreamWith();
    const writer = replica(upstream);
    await writer.whenReady();
    await waitFor(async () => (await redis.exists(keyOf(writer))) === 1);
    const expected = await toggleNames(writer);

    upstream.fault = { status: 503 };
    const logger = capturingLogger();
    const reader = replica(upstream, { logger });
    await reader.whenReady();
    expect(await toggleNames(reader)).toEqual(expected);
    const line = logger.lines.find((l) => l.msg.includes('ready from the Redis backup'));
    expect(line?.msg).toMatch(/fetched \d+s ago/);
    expect(await metricsOf(reader)).toMatch(/^flags_proxy_backup_in_use 1$/m);
    expect(await metricsOf(reader)).toMatch(/^flags_proxy_backup_age_seconds\{origin="read"\} \d/m);

    upstream.setFeatures(onlyToggle('live-only'));
    upstream.fault = undefined;
    await waitFor(async () => (await toggleNames(reader)).join() === 'live-only');
    expect(await metricsOf(reader)).toMatch(/^flags_proxy_backup_in_use 0$/m);
    expect(
      logger.lines.some((l) => l.msg.includes('serving its definitions instead of the Redis backup')),
    ).toBe(true);
  },
);

test('a live upstream wins over an older backup in a reachable Redis', async () => {
  const upstream = await upstreamWith(onlyToggle('old'));
  const writer = replica(upstream);
  await writer.whenReady();
  await waitFor(async () => (await redis.exists(keyOf(writer))) === 1);
  await writer.close();

  upstream.setFeatures(onlyToggle('new'));
  const fresh = replica(upstream);
  await fresh.whenReady();
  await new Promise((r) => setTimeout(r, 300));
  expect(await toggleNames(fresh)).toEqual(['new']);
  expect(await metricsOf(fresh)).toMatch(/^flags_proxy_backup_in_use 0$/m);
  // and it wrote the live definitions over the old backup
  await waitFor(async () => ((await redis.get(keyOf(fresh))) ?? '').includes('"new"'));
});

test.concurrent.each([
  ['not JSON', () => 'garbage{'],
  [
    'definitions that fail the schema',
    () =>
      JSON.stringify({
        format: 1,
        digest: 'x',
        fetchedAt: Date.now(),
        definitions: { version: 2, features: [{ name: 'x', enabled: 'yes' }] },
      }),
  ],
  [
    'a digest that does not match',
    () =>
      JSON.stringify({ format: 1, digest: 'x', fetchedAt: Date.now(), definitions: onlyToggle('forged') }),
  ],
])('ignores a backup holding %s and counts it', async (_what, value) => {
  const upstream = await upstreamWith(onlyToggle('live'));
  upstream.fault = { status: 503 };
  const logger = capturingLogger();
  const app = replica(upstream, { logger });
  await redis.set(keyOf(app), value());
  await waitFor(() => logger.lines.some((l) => l.msg.includes('ignoring the backup in Redis')), 8000);
  expect(app.features.isReady()).toBe(false);

  upstream.fault = undefined;
  await app.whenReady();
  expect(await toggleNames(app)).toEqual(['live']);
  expect(await metricsOf(app)).toMatch(/^flags_proxy_backup_errors_total\{kind="invalid"\} [1-9]/m);
});

test('a Redis that is down does not delay a live upstream, and is logged once and counted', async () => {
  const upstream = await upstreamWith();
  const logger = capturingLogger();
  const started = Date.now();
  const app = await readyProxyFor(upstream, { redisUrl: 'redis://:hunter2@127.0.0.1:1', logger });
  apps.push(app);
  expect(Date.now() - started).toBeLessThan(1500);
  await waitFor(
    async () => /flags_proxy_backup_errors_total\{kind="connection"\} [2-9]/.test(await metricsOf(app)),
    8000,
  );
  const redisLines = logger.lines.filter((l) => l.msg.includes('Redis backup unavailable'));
  expect(redisLines).toHaveLength(1);
  expect(JSON.stringify(logger.lines)).not.toContain('hunter2');
});

test('a Redis that accepts connections but never answers does not delay a live upstream', async () => {
  const sockets: Socket[] = [];
  const silent = net.createServer((s) => sockets.push(s));
  servers.push(silent);
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const { port } = silent.address() as AddressInfo;
  const upstream = await upstreamWith(onlyToggle('live'));
  const started = Date.now();
  const app = await readyProxyFor(upstream, {
    redisUrl: `redis://127.0.0.1:${port}`,
    redisKeyPrefix: prefix,
  });
  apps.push(app);
  expect(Date.now() - started).toBeLessThan(1500);
  expect(await toggleNames(app)).toEqual(['live']);
  const closing = Date.now();
  await app.close();
  apps.splice(apps.indexOf(app), 1);
  expect(Date.now() - closing).toBeLessThan(3000);
  for (const s of sockets) s.destroy();
});

describe('what a replica reads from Redis at start is checked before it is trusted', () => {
  /** A replica whose upstream answers 503 until told otherwise, with its log captured. */
  async function startingReplica(options: ProxyOptions = {}) {
    const upstream = await upstreamWith(onlyToggle('live-definitions'));
    upstream.fault = { status: 503 };
    const logger = capturingLogger();
    const app = replica(upstream, { logger, ...options });
    return { upstream, logger, app };
  }

  /** Waits for the warning about the backup, checks the replica stayed not ready, then lets the upstream answer. */
  async function ignoredThenUpstream(
    { upstream, logger, app }: Awaited<ReturnType<typeof startingReplica>>,
    why: RegExp,
  ): Promise<void> {
    await waitFor(
      () => logger.lines.some((l) => l.msg.startsWith('Redis backup: ignoring the backup')),
      15_000,
    );
    const line = logger.lines.find((l) => l.msg.startsWith('Redis backup: ignoring the backup'));
    expect(line?.level).toBe('warn');
    expect(line?.msg).toMatch(why);
    expect(app.features.isReady()).toBe(false);
    await request(app).get('/proxy').set('Authorization', CLIENT_KEY).expect(503);
    upstream.fault = undefined;
    await app.whenReady();
    expect(await toggleNames(app)).toEqual(['live-definitions']);
    expect(await metricsOf(app)).toMatch(/^flags_proxy_backup_errors_total\{kind="invalid"\} [1-9]/m);
  }

  test.concurrent(
    'a value larger than maxStoredDefinitionsBytes is ignored without being read, and the replica waits for the upstream',
    async () => {
      const starting = await startingReplica();
      // 100 MiB, made by Redis itself: above the default limit of 64 MiB.
      await redis.setrange(keyOf(starting.app), 100 * 1024 * 1024, 'x');
      await ignoredThenUpstream(
        starting,
        /it is 104857601 bytes, above maxStoredDefinitionsBytes \(FLAGS_MAX_STORED_DEFINITIONS_BYTES\) = 67108864/,
      );
    },
  );

  test.concurrent('a backup within the limit is still read', async () => {
    const starting = await startingReplica({ maxStoredDefinitionsBytes: 100_000 });
    await redis.set(keyOf(starting.app), recordOf(onlyToggle('from-backup'), Date.now() - 5_000));
    await starting.app.whenReady();
    expect(await toggleNames(starting.app)).toEqual(['from-backup']);
  });

  test.concurrent('a valid backup above a smaller configured limit is ignored', async () => {
    const starting = await startingReplica({ maxStoredDefinitionsBytes: 100 });
    await redis.set(keyOf(starting.app), recordOf(onlyToggle('from-backup'), Date.now() - 5_000));
    await ignoredThenUpstream(starting, /bytes, above maxStoredDefinitionsBytes .* = 100$/);
  });

  test.concurrent(
    'a record written by an earlier version (format 1, no scope) is ignored, naming why',
    async () => {
      const starting = await startingReplica();
      const json = JSON.stringify(onlyToggle('unscoped'));
      const digest = createHash('sha256').update(json).digest('hex');
      await redis.set(
        keyOf(starting.app),
        `{"format":1,"digest":"${digest}","fetchedAt":${Date.now() - 5_000},"definitions":${json}}`,
      );
      await ignoredThenUpstream(starting, /it names no scope \(written by an earlier version\)/);
    },
  );

  test.concurrent(
    'a backup fetched in the future is ignored, naming why, instead of being served as "fetched 0s ago"',
    async () => {
      const starting = await startingReplica();
      const tomorrow = Date.now() + 86_400_000;
      await redis.set(keyOf(starting.app), recordOf(onlyToggle('from-the-future'), tomorrow));
      await ignoredThenUpstream(starting, /fetchedAt \(\d{4}-\d\d-\d\dT[\d:.]+Z\) is in the future/);
    },
  );
});

/**
 * A backup record as docs/operations.md describes it: format 2, the scope of the replica's upstream
 * token (here one in another format: the configured environment, `default`, every project), and a
 * SHA-256 of the head and the definitions.
 */
function recordOf(definitions: object, fetchedAt: number): string {
  const json = JSON.stringify(definitions);
  const head = `"scope":{"environment":"default","projects":"*"},"fetchedAt":${fetchedAt},"tokens":[]`;
  const digest = createHash('sha256').update(`${head}\n${json}`).digest('hex');
  return `{"format":2,${head},"digest":"${digest}","definitions":${json}}`;
}
