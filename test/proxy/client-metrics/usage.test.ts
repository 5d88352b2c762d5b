import http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { InMemoryStorageProvider, UnleashClient } from 'unleash-proxy-client';
import type { ProxyApp } from '../../../src/proxy/app';
import { start } from '../../../src/proxy/start';
import { silentLogger } from '../../../src/common/logging/logger';
import { UsageAggregator, type DropReason } from '../../../src/proxy/client-metrics/usage-aggregator';
import { sampleFeatures } from '../../support/fixtures';
import { CLIENT_KEY, readyProxyFor, waitFor } from '../../support/proxy';
import { LoopbackServers } from '../../support/listen';
import { TestUpstream, type CapturedRequest } from '../../support/upstream';

interface ForwardedBucket {
  appName: string;
  instanceId: string;
  environment?: string;
  bucket: {
    start: string;
    stop: string;
    toggles: Record<string, { yes: number; no: number; variants?: Record<string, number> }>;
  };
}

let upstream: TestUpstream;
const apps: ProxyApp[] = [];
const servers = new LoopbackServers();
const listen = (app: ProxyApp) => servers.listen(app);

async function proxy(options: Parameters<typeof readyProxyFor>[1] = {}): Promise<ProxyApp> {
  const app = await readyProxyFor(upstream, options);
  apps.push(app);
  return app;
}

const now = Date.now();
function metricsPayload(
  appName: string,
  toggles: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  return {
    appName,
    instanceId: 'browser',
    bucket: { start: new Date(now - 1000).toISOString(), stop: new Date(now).toISOString(), toggles },
    ...extra,
  };
}

const forwardedFor = (requests: CapturedRequest[], appName: string): ForwardedBucket[] =>
  requests.map((r) => r.body as ForwardedBucket).filter((b) => b?.appName === appName);

/** Sums every forwarded bucket of one app, as the upstream would. */
function totals(
  buckets: ForwardedBucket[],
): Record<string, { yes: number; no: number; variants: Record<string, number> }> {
  const sum: Record<string, { yes: number; no: number; variants: Record<string, number> }> = {};
  for (const { bucket } of buckets) {
    for (const [name, c] of Object.entries(bucket.toggles)) {
      const t = (sum[name] ??= { yes: 0, no: 0, variants: {} });
      t.yes += c.yes;
      t.no += c.no;
      for (const [v, n] of Object.entries(c.variants ?? {})) t.variants[v] = (t.variants[v] ?? 0) + n;
    }
  }
  return sum;
}

beforeAll(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
});

afterEach(async () => {
  await servers.closeAll();
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

afterAll(async () => {
  await upstream.stop();
});

describe('POST /proxy/client/metrics', () => {
  test('forwards the summed counts upstream under each client app name, with the upstream token', async () => {
    const app = await proxy({ metricsInterval: 100, flagsInstanceId: 'proxy-1' });
    const post = (body: unknown, path = '/proxy/client/metrics') =>
      request(app)
        .post(path)
        .set('Authorization', CLIENT_KEY)
        .send(body as object);

    expect(
      (await post(metricsPayload('web-shop', { 'always-on': { yes: 3, no: 1, variants: { blue: 2 } } })))
        .status,
    ).toBe(202);
    expect(
      (
        await post(
          {
            appName: 'web-shop',
            instanceId: 'browser',
            bucket: {
              start: now - 500,
              stop: now,
              toggles: { 'always-on': { yes: 2, no: 0, variants: { blue: 1, red: 4 } } },
            },
          },
          '/proxy/all/client/metrics',
        )
      ).status,
    ).toBe(202);
    expect((await post(metricsPayload('mobile-app', { 'plan-pro': { yes: 0, no: 7 } }))).status).toBe(202);

    const expected = {
      'web-shop': { 'always-on': { yes: 5, no: 1, variants: { blue: 3, red: 4 } } },
      'mobile-app': { 'plan-pro': { yes: 0, no: 7, variants: {} } },
    };
    await waitFor(() =>
      Object.entries(expected).every(
        ([appName, want]) =>
          JSON.stringify(totals(forwardedFor(upstream.posted('/api/client/metrics'), appName))) ===
          JSON.stringify(want),
      ),
    );

    const forwarded = upstream
      .posted('/api/client/metrics')
      .filter((r) => (r.body as ForwardedBucket).appName === 'web-shop');
    for (const r of forwarded) {
      expect(r.headers.authorization).toBe(upstream.token);
      expect(r.headers['unleash-appname']).toBe('web-shop');
      const body = r.body as ForwardedBucket;
      expect(body.instanceId).toBe('proxy-1');
      expect(Date.parse(body.bucket.start)).toBeLessThanOrEqual(Date.parse(body.bucket.stop));
      expect(JSON.stringify(body)).not.toContain(CLIENT_KEY);
    }
  });

  test('forwards what the real frontend SDK (unleash-proxy-client) reports', async () => {
    const app = await proxy({ metricsInterval: 100 });
    const base = await listen(app);
    const client = new UnleashClient({
      url: `${base}/proxy`,
      clientKey: CLIENT_KEY,
      appName: 'frontend-e2e',
      disableRefresh: true,
      metricsInterval: 3600,
      metricsIntervalInitial: 0,
      storageProvider: new InMemoryStorageProvider(),
    });
    try {
      await client.start();
      expect(client.isEnabled('always-on')).toBe(true);
      expect(client.isEnabled('always-on')).toBe(true);
      expect(client.isEnabled('switched-off')).toBe(false);
      await client.sendMetrics();
    } finally {
      client.stop();
    }
    await waitFor(() => forwardedFor(upstream.posted('/api/client/metrics'), 'frontend-e2e').length > 0);
    const sum = totals(forwardedFor(upstream.posted('/api/client/metrics'), 'frontend-e2e'));
    expect(sum['always-on']).toMatchObject({ yes: 2, no: 0 });
    expect(sum['switched-off']).toMatchObject({ yes: 0, no: 1 });
  });

  test.each([
    [{ instanceId: 'i', bucket: { start: now, stop: now, toggles: {} } }, 'appName'],
    [metricsPayload('bad-app', { t: { yes: -1, no: 0 } }), 'bucket.toggles.t.yes'],
    [
      metricsPayload('bad-app', { t: { yes: 1, no: 0, variants: { blue: 'x' } } }),
      'bucket.toggles.t.variants.blue',
    ],
    [
      { ...metricsPayload('bad-app', {}), bucket: { start: 'yesterday', stop: now, toggles: {} } },
      'bucket.start',
    ],
    [
      { ...metricsPayload('bad-app', {}), bucket: { start: now, stop: now - 10, toggles: {} } },
      'bucket.stop',
    ],
    [{ ...metricsPayload('bad-app', {}), bucket: { start: now, stop: 9e15, toggles: {} } }, 'bucket.stop'],
    [{ ...metricsPayload('bad-app', { ['x'.repeat(256)]: { yes: 1, no: 0 } }) }, 'bucket.toggles'],
  ])('answers 400 ValidationError naming the field for %j and forwards nothing', async (body, field) => {
    const app = await proxy({ metricsInterval: 50 });
    const res = await request(app).post('/proxy/client/metrics').set('Authorization', CLIENT_KEY).send(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'ValidationError',
      message: expect.any(String),
    });
    expect(res.body.message).toContain(field);
    expect(app.clientUsage.aggregator.size()).toEqual({ apps: 0, toggles: 0, variants: 0 });
    // a forwarding run now, as the 50 ms timer would: still nothing of the refused body goes upstream
    await app.clientUsage.forwarder.flush();
    expect(forwardedFor(upstream.posted('/api/client/metrics'), 'bad-app')).toEqual([]);
  });

  test('answers 401 without a valid client key and does not parse the body', async () => {
    const app = await proxy();
    const none = await request(app).post('/proxy/client/metrics').send(metricsPayload('x', {}));
    const wrong = await request(app)
      .post('/proxy/client/metrics')
      .set('Authorization', 'not-a-key')
      .set('Content-Type', 'application/json')
      .send('{not json');
    expect(none.status).toBe(401);
    expect(wrong.status).toBe(401);
    expect(wrong.body.name).toBe('AuthenticationRequired');
    expect(JSON.stringify(wrong.body)).not.toContain('not-a-key');
  });

  test('keeps ten thousand posts of a few toggles in a handful of aggregated entries', async () => {
    const app = await proxy({ metricsInterval: 3_600_000 });
    const base = await listen(app);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 50 });
    const body = (i: number) =>
      JSON.stringify(
        metricsPayload(i % 2 === 0 ? 'app-even' : 'app-odd', {
          'always-on': { yes: 1, no: 0, variants: { blue: 1 } },
          'plan-pro': { yes: 0, no: 1 },
          'with-variants': { yes: 1, no: 1, variants: { blue: 1, config: 1 } },
        }),
      );
    const postOne = (i: number) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request(
          `${base}/proxy/client/metrics`,
          {
            method: 'POST',
            agent,
            headers: { authorization: CLIENT_KEY, 'content-type': 'application/json' },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end(body(i));
      });
    const statuses: number[] = [];
    for (let i = 0; i < 10_000; i += 100) {
      statuses.push(...(await Promise.all(Array.from({ length: 100 }, (_, j) => postOne(i + j)))));
    }
    agent.destroy();
    expect(statuses.every((s) => s === 202)).toBe(true);
    expect(app.clientUsage.aggregator.size()).toEqual({ apps: 2, toggles: 6, variants: 6 });

    await app.close();
    const sum = totals(forwardedFor(upstream.posted('/api/client/metrics'), 'app-even'));
    expect(sum['always-on']).toEqual({ yes: 5000, no: 0, variants: { blue: 5000 } });
    expect(sum['with-variants']).toEqual({ yes: 5000, no: 5000, variants: { blue: 5000, config: 5000 } });
  }, 120_000);

  test('drops apps beyond the bound and counts them in Prometheus', async () => {
    const app = await proxy({ metricsInterval: 3_600_000, trustProxy: true });
    for (let i = 0; i < 1001; i += 1) {
      const res = await request(app)
        .post('/proxy/client/metrics')
        .set('Authorization', CLIENT_KEY)
        .set('X-Forwarded-For', `192.0.2.${Math.floor(i / 50)}`) // 50 apps per client address
        .send(metricsPayload(`bounded-app-${i}`, { 'always-on': { yes: 1, no: 0 } }));
      expect(res.status).toBe(202);
    }
    expect(app.clientUsage.aggregator.size().apps).toBe(1000);
    const text = (
      await request(app).get('/proxy/internal-backstage/prometheus').set('Authorization', CLIENT_KEY)
    ).text;
    expect(text).toMatch(/^flags_proxy_client_usage_dropped_total\{reason="app"\} 1$/m);
    expect(text).toMatch(/^flags_proxy_client_usage_entries\{kind="apps"\} 1000$/m);
  });

  test('close() forwards the pending counts before it resolves', async () => {
    const app = await proxy({ metricsInterval: 3_600_000 });
    const res = await request(app)
      .post('/proxy/client/metrics')
      .set('Authorization', CLIENT_KEY)
      .send(metricsPayload('closing-app', { 'always-on': { yes: 9, no: 2 } }));
    expect(res.status).toBe(202);
    expect(forwardedFor(upstream.posted('/api/client/metrics'), 'closing-app')).toEqual([]);
    await app.close();
    expect(totals(forwardedFor(upstream.posted('/api/client/metrics'), 'closing-app'))).toEqual({
      'always-on': { yes: 9, no: 2, variants: {} },
    });
  });

  test('the shutdown that SIGTERM runs (start().stop()) forwards the pending client counts', async () => {
    const running = await start(
      {
        port: 0,
        flagsUrl: upstream.url,
        flagsApiToken: upstream.token,
        clientKeys: [CLIENT_KEY],
        metricsInterval: 3_600_000,
        logger: silentLogger,
      },
      {},
    );
    if (running.kind !== 'proxy') throw new Error('expected a single process, got a cluster primary');
    try {
      await running.app.whenReady();
      const { port } = running.server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/proxy/client/metrics`, {
        method: 'POST',
        headers: { authorization: CLIENT_KEY, 'content-type': 'application/json' },
        body: JSON.stringify(metricsPayload('sigterm-app', { 'always-on': { yes: 4, no: 1 } })),
      });
      expect(res.status).toBe(202);
    } finally {
      await running.stop();
    }
    expect(totals(forwardedFor(upstream.posted('/api/client/metrics'), 'sigterm-app'))).toEqual({
      'always-on': { yes: 4, no: 1, variants: {} },
    });
  });

  test('with metricsInterval 0 answers 202 and forwards nothing', async () => {
    const app = await proxy({ metricsInterval: 0 });
    const res = await request(app)
      .post('/proxy/client/metrics')
      .set('Authorization', CLIENT_KEY)
      .send(metricsPayload('silent-app', { 'always-on': { yes: 1, no: 0 } }));
    expect(res.status).toBe(202);
    await app.close();
    expect(forwardedFor(upstream.posted('/api/client/metrics'), 'silent-app')).toEqual([]);
  });
});

describe('POST /proxy/client/register', () => {
  test('forwards the registration upstream under the client app name and instance id', async () => {
    const app = await proxy({ metricsInterval: 100 });
    const res = await request(app)
      .post('/proxy/client/register')
      .set('Authorization', CLIENT_KEY)
      .send({
        appName: 'registering-app',
        instanceId: 'pod-7',
        sdkVersion: 'unleash-client-node:6.0.0',
        strategies: ['default', 'userWithId'],
        started: new Date(now).toISOString(),
        interval: 10000,
        platformName: 'node',
      });
    expect(res.status).toBe(202);
    await waitFor(() => forwardedFor(upstream.posted('/api/client/register'), 'registering-app').length > 0);
    const [forwarded] = upstream
      .posted('/api/client/register')
      .filter((r) => (r.body as { appName?: string }).appName === 'registering-app');
    expect(forwarded.headers.authorization).toBe(upstream.token);
    expect(forwarded.body).toEqual({
      appName: 'registering-app',
      instanceId: 'pod-7',
      sdkVersion: 'unleash-client-node:6.0.0',
      strategies: ['default', 'userWithId'],
      started: new Date(now).toISOString(),
      interval: 10000,
    });
  });

  test('accepts a registration without instanceId, as Unleash does, and forwards it as instance "default"', async () => {
    const app = await proxy({ metricsInterval: 3_600_000 });
    const res = await request(app)
      .post('/proxy/client/register')
      .set('Authorization', CLIENT_KEY)
      .send({ appName: 'no-instance-app', strategies: [] });
    expect(res.status).toBe(202);
    await app.clientUsage.forwarder.flush();
    expect(forwardedFor(upstream.posted('/api/client/register'), 'no-instance-app')).toEqual([
      { appName: 'no-instance-app', instanceId: 'default', strategies: [] },
    ]);
  });

  test('answers 400 naming appName when it is missing', async () => {
    const app = await proxy();
    const res = await request(app)
      .post('/proxy/client/register')
      .set('Authorization', CLIENT_KEY)
      .send({ instanceId: 'i', strategies: [] });
    expect(res.status).toBe(400);
    expect(res.body.name).toBe('ValidationError');
    expect(res.body.message).toContain('appName');
  });
});

/** A client-API upstream whose metrics endpoint answers with a status the test chooses. */
class FlakyMetricsUpstream {
  readonly metrics: ForwardedBucket[] = [];
  metricsStatus = 500;
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path === '/api/client/features') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(sampleFeatures()));
      } else if (path === '/api/client/metrics') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ForwardedBucket;
        if (this.metricsStatus < 300) this.metrics.push(body);
        res.writeHead(this.metricsStatus).end();
      } else {
        res.writeHead(202).end();
      }
    });
  });
  attempts = 0;

  async start(): Promise<string> {
    this.server.on('request', (req) => {
      if (req.url?.startsWith('/api/client/metrics')) this.attempts += 1;
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/api`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

describe('forwarding when the upstream fails', () => {
  test('keeps the counts while the upstream answers 500 and forwards them, merged, once it accepts', async () => {
    const flaky = new FlakyMetricsUpstream();
    const url = await flaky.start();
    const app = await readyProxyFor(upstream, { flagsUrl: url, metricsInterval: 50 });
    apps.push(app);
    try {
      const post = (yes: number) =>
        request(app)
          .post('/proxy/client/metrics')
          .set('Authorization', CLIENT_KEY)
          .send(metricsPayload('retry-app', { 'always-on': { yes, no: 0 } }));
      expect((await post(4)).status).toBe(202);
      await waitFor(() => flaky.attempts >= 2);
      expect((await post(6)).status).toBe(202);
      // a forward in flight holds the bucket outside the aggregator until the 500 comes back
      await waitFor(() => flaky.attempts >= 4 && app.clientUsage.aggregator.size().toggles === 1);
      expect(flaky.metrics).toEqual([]);
      expect(app.clientUsage.aggregator.size().toggles).toBe(1);

      flaky.metricsStatus = 202;
      await waitFor(() => flaky.metrics.some((m) => m.appName === 'retry-app'));
      expect(totals(flaky.metrics.filter((m) => m.appName === 'retry-app'))).toEqual({
        'always-on': { yes: 10, no: 0, variants: {} },
      });
      const text = (
        await request(app).get('/proxy/internal-backstage/prometheus').set('Authorization', CLIENT_KEY)
      ).text;
      expect(text).toMatch(
        /^flags_proxy_client_usage_forwards_total\{path="client\/metrics",result="rejected"\} [1-9]/m,
      );
      expect(text).toMatch(
        /^flags_proxy_client_usage_forwards_total\{path="client\/metrics",result="accepted"\} [1-9]/m,
      );
    } finally {
      await app.close();
      apps.splice(apps.indexOf(app), 1);
      await flaky.stop();
    }
  });
});

/** Refuses, like the flag server, times that are not ISO 8601 with a four-digit year, and one toggle name. */
function refuseLikeTheFlagServer(_path: string, body: unknown): number | undefined {
  const b = body as Partial<ForwardedBucket> & { started?: string };
  const times = [b.bucket?.start, b.bucket?.stop, b.started].filter((t) => t !== undefined);
  if (times.some((t) => !/^\d{4}-\d\d-\d\dT/.test(String(t)))) return 400;
  if (b.bucket?.toggles && 'refused-by-upstream' in b.bucket.toggles) return 400;
  if ((b as { appName?: string }).appName === 'refused-registration') return 400;
  return undefined;
}

describe('the usage relay cannot be poisoned', () => {
  afterEach(() => {
    upstream.usageStatus = undefined;
  });

  const farFuture = Date.UTC(3000, 0, 1);
  test.each([
    ['a stop far in the future (epoch ms)', { start: now, stop: farFuture }, 'bucket.stop'],
    ['the largest Date as start and stop', { start: 8.64e15, stop: 8.64e15 }, 'bucket.start'],
    [
      'a stop two days ahead (ISO)',
      { start: now, stop: new Date(now + 2 * 86_400_000).toISOString() },
      'bucket.stop',
    ],
    ['a start before 2000', { start: '1999-12-31T23:59:59Z', stop: now }, 'bucket.start'],
    ['a start at epoch 0', { start: 0, stop: now }, 'bucket.start'],
  ])('answers 400 naming the field for %s', async (_what, times, field) => {
    const app = await proxy({ metricsInterval: 3_600_000 });
    const res = await request(app)
      .post('/proxy/client/metrics')
      .set('Authorization', CLIENT_KEY)
      .send({
        appName: 'time-traveller',
        instanceId: 'i',
        bucket: { ...times, toggles: { t: { yes: 1, no: 0 } } },
      });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'ValidationError',
      message: expect.any(String),
    });
    expect(res.body.message).toContain(field);
    expect(res.body.message).toContain('2000-01-01T00:00:00.000Z');
    expect(app.clientUsage.aggregator.size().apps).toBe(0);
  });

  test('accepts times from 2000 up to a day ahead of the proxy clock', async () => {
    const app = await proxy({ metricsInterval: 3_600_000 });
    const post = (start: unknown, stop: unknown) =>
      request(app)
        .post('/proxy/client/metrics')
        .set('Authorization', CLIENT_KEY)
        .send({
          appName: 'in-window',
          instanceId: 'i',
          bucket: { start, stop, toggles: { t: { yes: 1, no: 0 } } },
        });
    expect((await post('2000-01-01T00:00:00Z', now)).status).toBe(202);
    expect((await post(now, now + 23 * 3_600_000)).status).toBe(202);
  });

  test('a registration started far in the future is a 400 naming started', async () => {
    const app = await proxy({ metricsInterval: 3_600_000 });
    const res = await request(app)
      .post('/proxy/client/register')
      .set('Authorization', CLIENT_KEY)
      .send({ appName: 'a', instanceId: 'i', started: 8.64e15 });
    expect(res.status).toBe(400);
    expect(res.body.message).toContain('started');
  });

  test('a bucket the upstream refuses with 400 is dropped and counted; later counts of the app arrive', async () => {
    upstream.usageStatus = refuseLikeTheFlagServer;
    const app = await proxy({ metricsInterval: 3_600_000 });
    const post = (body: unknown) =>
      request(app)
        .post('/proxy/client/metrics')
        .set('Authorization', CLIENT_KEY)
        .send(body as object);
    // What the issue reproduced: a time the upstream refuses (400 here now), then a bucket refused for another reason.
    await post({
      appName: 'poisoned-app',
      instanceId: 'i',
      bucket: { start: now, stop: 8.64e15, toggles: { 'always-on': { yes: 1, no: 0 } } },
    });
    expect(
      (await post(metricsPayload('poisoned-app', { 'refused-by-upstream': { yes: 1, no: 0 } }))).status,
    ).toBe(202);
    await app.clientUsage.forwarder.flush();
    expect(app.clientUsage.aggregator.size()).toEqual({ apps: 0, toggles: 0, variants: 0 });

    expect((await post(metricsPayload('poisoned-app', { 'always-on': { yes: 3, no: 1 } }))).status).toBe(202);
    await app.clientUsage.forwarder.flush();
    const accepted = forwardedFor(upstream.posted('/api/client/metrics'), 'poisoned-app').filter(
      (b) => refuseLikeTheFlagServer('', b) === undefined,
    );
    expect(totals(accepted)).toEqual({ 'always-on': { yes: 3, no: 1, variants: {} } });

    const text = (
      await request(app).get('/proxy/internal-backstage/prometheus').set('Authorization', CLIENT_KEY)
    ).text;
    expect(text).toMatch(/^flags_proxy_client_usage_dropped_total\{reason="metrics_refused"\} [1-9]/m);
    expect(text).toMatch(
      /^flags_proxy_client_usage_forwards_total\{path="client\/metrics",result="refused"\} [1-9]/m,
    );
    expect(text).not.toContain('poisoned-app');
  });

  test('a registration the upstream refuses with 400 is sent once, not retried', async () => {
    upstream.usageStatus = refuseLikeTheFlagServer;
    const app = await proxy({ metricsInterval: 3_600_000 });
    const res = await request(app)
      .post('/proxy/client/register')
      .set('Authorization', CLIENT_KEY)
      .send({ appName: 'refused-registration', instanceId: 'i' });
    expect(res.status).toBe(202);
    await app.clientUsage.forwarder.flush();
    await app.clientUsage.forwarder.flush();
    expect(forwardedFor(upstream.posted('/api/client/register'), 'refused-registration')).toHaveLength(1);
    expect(app.clientUsage.registrations.size).toBe(0);
  });

  test('refused buckets of a thousand apps do not fill the app slots: a new app is still forwarded', async () => {
    upstream.usageStatus = refuseLikeTheFlagServer;
    const app = await proxy({ metricsInterval: 3_600_000, trustProxy: true });
    const base = await listen(app);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 20 });
    let sent = 0;
    const postOne = (body: unknown) =>
      new Promise<number>((resolve, reject) => {
        // 50 apps per client address, so that no address reaches its own quota of app slots.
        const from = `192.0.2.${Math.floor(sent++ / 50)}`;
        const req = http.request(
          `${base}/proxy/client/metrics`,
          {
            method: 'POST',
            agent,
            headers: {
              authorization: CLIENT_KEY,
              'content-type': 'application/json',
              'x-forwarded-for': from,
            },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(body));
      });
    try {
      for (let i = 0; i < 1000; i += 50) {
        const statuses = await Promise.all(
          Array.from({ length: 50 }, (_, j) =>
            postOne(metricsPayload(`slot-filler-${i + j}`, { 'refused-by-upstream': { yes: 1, no: 0 } })),
          ),
        );
        expect(statuses.every((s) => s === 202)).toBe(true);
      }
      expect(app.clientUsage.aggregator.size().apps).toBe(1000);
      await app.clientUsage.forwarder.flush();
      expect(app.clientUsage.aggregator.size().apps).toBe(0);

      expect(await postOne(metricsPayload('late-newcomer', { 'always-on': { yes: 2, no: 0 } }))).toBe(202);
      await app.clientUsage.forwarder.flush();
      expect(totals(forwardedFor(upstream.posted('/api/client/metrics'), 'late-newcomer'))).toEqual({
        'always-on': { yes: 2, no: 0, variants: {} },
      });
    } finally {
      agent.destroy();
    }
  }, 60_000);
});

describe('UsageAggregator bounds', () => {
  test('drops new toggles and variants beyond their bounds while known ones keep counting', () => {
    const dropped: DropReason[] = [];
    const aggregator = new UsageAggregator(
      { maxApps: 2, maxToggles: 2, maxVariants: 1, maxAppsPerSource: 2 },
      (r) => dropped.push(r),
    );
    const bucket = (
      appName: string,
      toggles: Record<string, { yes: number; no: number; variants?: Record<string, number> }>,
    ) => ({
      appName,
      start: 1,
      stop: 2,
      toggles,
    });
    aggregator.add(
      bucket('a', {
        t1: { yes: 1, no: 0, variants: { v1: 1, v2: 1 } },
        t2: { yes: 1, no: 0 },
        t3: { yes: 1, no: 0 },
      }),
    );
    aggregator.add(bucket('a', { t1: { yes: 1, no: 1, variants: { v1: 2 } } }));
    aggregator.add(bucket('b', { t1: { yes: 1, no: 0 } }));
    aggregator.add(bucket('c', { t1: { yes: 1, no: 0 } }));
    expect(aggregator.size()).toEqual({ apps: 2, toggles: 2, variants: 1 });
    expect(dropped.sort()).toEqual(['app', 'toggle', 'toggle', 'variant']);
    expect(aggregator.drain()).toEqual([
      {
        appName: 'a',
        start: 1,
        stop: 2,
        toggles: { t1: { yes: 2, no: 1, variants: { v1: 3 } }, t2: { yes: 1, no: 0, variants: {} } },
      },
    ]);
    expect(aggregator.size()).toEqual({ apps: 0, toggles: 0, variants: 0 });
  });

  test('keeps apps of different environments apart', () => {
    const aggregator = new UsageAggregator();
    aggregator.add({
      appName: 'a',
      environment: 'production',
      start: 5,
      stop: 6,
      toggles: { t: { yes: 1, no: 0 } },
    });
    aggregator.add({ appName: 'a', start: 1, stop: 9, toggles: { t: { yes: 2, no: 0 } } });
    aggregator.add({
      appName: 'a',
      environment: 'production',
      start: 3,
      stop: 4,
      toggles: { t: { yes: 4, no: 0 } },
    });
    expect(aggregator.drain()).toEqual([
      {
        appName: 'a',
        environment: 'production',
        start: 3,
        stop: 6,
        toggles: { t: { yes: 5, no: 0, variants: {} } },
      },
      { appName: 'a', start: 1, stop: 9, toggles: { t: { yes: 2, no: 0, variants: {} } } },
    ]);
  });
});

describe('app names and payloads the upstream cannot take', () => {
  afterEach(() => {
    upstream.usageStatus = undefined;
  });

  test('an app name outside Latin-1 reaches the upstream: the body as sent, the header percent-encoded', async () => {
    const app = await proxy({ metricsInterval: 3_600_000 });
    const appName = '応用プログラム';
    await request(app)
      .post('/proxy/client/metrics')
      .set('Authorization', CLIENT_KEY)
      .send(metricsPayload(appName, { 'always-on': { yes: 3, no: 1 } }))
      .expect(202);
    await request(app)
      .post('/proxy/client/register')
      .set('Authorization', CLIENT_KEY)
      .send({ appName, instanceId: 'tab-1', strategies: [] })
      .expect(202);
    await app.clientUsage.forwarder.flush();
    const [metrics] = upstream
      .posted('/api/client/metrics')
      .filter((r) => (r.body as ForwardedBucket).appName === appName);
    expect(metrics.headers['unleash-appname']).toBe(encodeURIComponent(appName));
    expect(totals([metrics.body as ForwardedBucket])).toEqual({
      'always-on': { yes: 3, no: 1, variants: {} },
    });
    const [registration] = upstream
      .posted('/api/client/register')
      .filter((r) => (r.body as { appName?: string }).appName === appName);
    expect(registration.headers['unleash-appname']).toBe(encodeURIComponent(appName));
    expect(app.clientUsage.aggregator.size().apps).toBe(0);
    expect(app.clientUsage.registrations.size).toBe(0);
  });

  test.each([
    ['without a bucket', {}],
    ['with bucket: null', { bucket: null }],
  ])('a metrics payload %s is answered 202 and nothing is forwarded', async (_what, extra) => {
    const app = await proxy({ metricsInterval: 3_600_000 });
    const appName = `bucketless-${Object.keys(extra).length}`;
    await request(app)
      .post('/proxy/client/metrics')
      .set('Authorization', CLIENT_KEY)
      .send({ appName, instanceId: 'i', ...extra })
      .expect(202);
    await app.clientUsage.forwarder.flush();
    expect(forwardedFor(upstream.posted('/api/client/metrics'), appName)).toEqual([]);
  });

  test('counts the upstream never takes are retried a bounded number of times, then dropped and counted', async () => {
    const flaky = new FlakyMetricsUpstream();
    const url = await flaky.start();
    const app = await readyProxyFor(upstream, { flagsUrl: url, metricsInterval: 3_600_000 });
    apps.push(app);
    try {
      await request(app)
        .post('/proxy/client/metrics')
        .set('Authorization', CLIENT_KEY)
        .send(metricsPayload('never-delivered', { 'always-on': { yes: 1, no: 0 } }))
        .expect(202);
      for (let i = 0; i < 9; i += 1) await app.clientUsage.forwarder.flush();
      expect(app.clientUsage.aggregator.size().apps).toBe(1);
      await app.clientUsage.forwarder.flush();
      expect(flaky.attempts).toBe(10);
      expect(app.clientUsage.aggregator.size().apps).toBe(0);
      const text = (
        await request(app).get('/proxy/internal-backstage/prometheus').set('Authorization', CLIENT_KEY)
      ).text;
      expect(text).toMatch(/^flags_proxy_client_usage_dropped_total\{reason="metrics_undeliverable"\} 1$/m);
      await app.clientUsage.forwarder.flush();
      expect(flaky.attempts).toBe(10);
    } finally {
      await app.close();
      apps.splice(apps.indexOf(app), 1);
      await flaky.stop();
    }
  });

  test('one client address sending a thousand made-up app names takes at most 100 slots; other clients keep theirs', async () => {
    const app = await proxy({ metricsInterval: 3_600_000, trustProxy: true });
    const base = await listen(app);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 20 });
    const postFrom = (from: string, body: unknown) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request(
          `${base}/proxy/client/metrics`,
          {
            method: 'POST',
            agent,
            headers: {
              authorization: CLIENT_KEY,
              'content-type': 'application/json',
              'x-forwarded-for': from,
            },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify(body));
      });
    try {
      for (let i = 0; i < 1000; i += 50) {
        const statuses = await Promise.all(
          Array.from({ length: 50 }, (_, j) =>
            postFrom('198.51.100.7', metricsPayload(`名前-${i + j}`, { 'always-on': { yes: 1, no: 0 } })),
          ),
        );
        expect(statuses.every((s) => s === 202)).toBe(true);
      }
      expect(app.clientUsage.aggregator.size().apps).toBe(100);
      expect(
        await postFrom('203.0.113.9', metricsPayload('honest-app', { 'always-on': { yes: 5, no: 0 } })),
      ).toBe(202);
      await app.clientUsage.forwarder.flush();
      expect(totals(forwardedFor(upstream.posted('/api/client/metrics'), 'honest-app'))).toEqual({
        'always-on': { yes: 5, no: 0, variants: {} },
      });
    } finally {
      agent.destroy();
    }
  }, 60_000);
});
