import request from 'supertest';
import { Gauge } from 'prom-client';
import type { ProxyApp } from '../../../src/proxy/app';
import { sampleFeatures } from '../../support/fixtures';
import { CLIENT_KEY, proxyFor, readyProxyFor, waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

const PATH = '/proxy/internal-backstage/prometheus';

let upstream: TestUpstream;
const apps: ProxyApp[] = [];
const upstreams: TestUpstream[] = [];

async function proxy(options: Parameters<typeof readyProxyFor>[1] = {}, from = upstream): Promise<ProxyApp> {
  const app = await readyProxyFor(from, options);
  apps.push(app);
  return app;
}

async function scrape(app: ProxyApp, path = PATH): Promise<string> {
  const res = await request(app).get(path).set('Authorization', CLIENT_KEY);
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain/);
  return res.text;
}

/** The value of one series (exact name and label set as printed), or undefined. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

beforeEach(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
});

afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await Promise.all([upstream, ...upstreams.splice(0)].map((u) => u.stop()));
});

describe('GET /proxy/internal-backstage/prometheus', () => {
  test('exposes flags_proxy_up and the update and fetch timestamps of the last sync', async () => {
    const testStart = Date.now();
    const app = await proxy();
    await waitFor(() => app.features.stats.lastFetch > 0);
    const text = await scrape(app);
    expect(text).toContain('# TYPE flags_proxy_up counter');
    expect(value(text, 'flags_proxy_up')).toBe(1);
    expect(text).toContain('# TYPE last_metrics_update_epoch_timestamp_ms gauge');
    expect(text).toContain('# TYPE last_metrics_fetch_epoch_timestamp_ms gauge');
    const update = value(text, 'last_metrics_update_epoch_timestamp_ms') ?? 0;
    const fetch = value(text, 'last_metrics_fetch_epoch_timestamp_ms') ?? 0;
    expect(update).toBeGreaterThanOrEqual(testStart);
    expect(update).toBeLessThanOrEqual(Date.now());
    expect(fetch).toBeGreaterThanOrEqual(update);
    expect(fetch).toBeLessThanOrEqual(Date.now());

    // the fetch timestamp moves on with every poll, also when nothing changed
    await new Promise((r) => setTimeout(r, 450));
    const later = await scrape(app);
    expect(value(later, 'last_metrics_fetch_epoch_timestamp_ms')).toBeGreaterThan(fetch);
    expect(value(later, 'last_metrics_update_epoch_timestamp_ms')).toBe(update);
  });

  test('counts requests by method, route template and status, never by raw path or secret', async () => {
    const app = await proxy();
    await request(app).get('/proxy?userId=secret-user-42').set('Authorization', CLIENT_KEY).expect(200);
    await request(app).get('/proxy?userId=other-user').set('Authorization', CLIENT_KEY).expect(200);
    await request(app).post('/proxy').set('Authorization', CLIENT_KEY).send({ toggles: 'nope' }).expect(400);
    await request(app).get('/PROXY/Health').expect(200);
    await request(app).get('/proxy/no-such-endpoint-xyz').set('Authorization', CLIENT_KEY).expect(404);
    await request(app).get('/proxy').set('Authorization', 'wrong-key-123').expect(401);
    const text = await scrape(app);

    expect(value(text, 'flags_proxy_http_requests_total{method="GET",route="/proxy",status="200"}')).toBe(2);
    expect(value(text, 'flags_proxy_http_requests_total{method="POST",route="/proxy",status="400"}')).toBe(1);
    expect(
      value(text, 'flags_proxy_http_requests_total{method="GET",route="/proxy/health",status="200"}'),
    ).toBe(1);
    expect(value(text, 'flags_proxy_http_requests_total{method="GET",route="unmatched",status="404"}')).toBe(
      1,
    );
    expect(value(text, 'flags_proxy_http_requests_total{method="GET",route="unmatched",status="401"}')).toBe(
      1,
    );
    expect(
      value(
        text,
        'flags_proxy_http_request_duration_seconds_count{method="GET",route="/proxy",status="200"}',
      ),
    ).toBe(2);
    for (const leak of [
      'secret-user-42',
      'no-such-endpoint-xyz',
      'wrong-key-123',
      CLIENT_KEY,
      upstream.token,
    ]) {
      expect(text).not.toContain(leak);
    }
  });

  test('labels routes with the base path', async () => {
    const app = await proxy({ proxyBasePath: 'base/path' });
    await request(app).get('/base/path/proxy').set('Authorization', CLIENT_KEY).expect(200);
    const text = await scrape(app, `/base/path${PATH}`);
    expect(
      value(text, 'flags_proxy_http_requests_total{method="GET",route="/base/path/proxy",status="200"}'),
    ).toBe(1);
  });

  test('reports the number of known toggles and the upstream fetch errors', async () => {
    const app = await proxy();
    const before = await scrape(app);
    expect(value(before, 'flags_proxy_toggles')).toBe(sampleFeatures().features.length);
    expect(value(before, 'flags_proxy_upstream_fetch_errors_total')).toBe(0);
    expect(value(before, 'flags_proxy_ready')).toBe(1);
    expect(before).toMatch(/^process_cpu_user_seconds_total /m);
    expect(before).toMatch(/^nodejs_heap_size_used_bytes /m);

    upstream.fault = { status: 500, body: 'boom' };
    await waitFor(() => app.features.stats.fetchErrors > 0);
    const after = await scrape(app);
    expect(value(after, 'flags_proxy_upstream_fetch_errors_total')).toBeGreaterThanOrEqual(1);
    expect(value(after, 'flags_proxy_toggles')).toBe(sampleFeatures().features.length);
  });

  test('two apps in one process each expose their own registry', async () => {
    const other = await new TestUpstream({
      ...sampleFeatures(),
      features: sampleFeatures().features.slice(0, 3),
    }).start();
    upstreams.push(other);
    const first = await proxy();
    const second = await proxy({}, other);
    await request(first).get('/proxy').set('Authorization', CLIENT_KEY).expect(200);
    await request(first).get('/proxy').set('Authorization', CLIENT_KEY).expect(200);

    const a = await scrape(first);
    const b = await scrape(second);
    expect(value(a, 'flags_proxy_up')).toBe(1);
    expect(value(b, 'flags_proxy_up')).toBe(1);
    expect(value(a, 'flags_proxy_toggles')).toBe(sampleFeatures().features.length);
    expect(value(b, 'flags_proxy_toggles')).toBe(3);
    expect(value(a, 'flags_proxy_http_requests_total{method="GET",route="/proxy",status="200"}')).toBe(2);
    expect(
      value(b, 'flags_proxy_http_requests_total{method="GET",route="/proxy",status="200"}'),
    ).toBeUndefined();
  });

  test('answers 401 without a client key', async () => {
    const app = await proxy();
    const res = await request(app).get(PATH);
    expect(res.status).toBe(401);
    expect(res.body.name).toBe('AuthenticationRequired');
  });

  test('answers 503 before the first synchronisation', async () => {
    upstream.fault = { status: 500 };
    const app = proxyFor(upstream);
    apps.push(app);
    const res = await request(app).get(PATH).set('Authorization', CLIENT_KEY);
    expect(res.status).toBe(503);
    expect(res.body.name).toBe('NotReady');
    // (closing a proxy that never synchronised leaves SDK timers behind; let it become ready first)
    upstream.fault = undefined;
    await app.whenReady();
    expect((await request(app).get(PATH).set('Authorization', CLIENT_KEY)).status).toBe(200);
  });
});

describe('scrape cost', () => {
  /** A series whose collection counts the renders of the registry. */
  function countRenders(app: ProxyApp): () => number {
    let renders = 0;
    new Gauge({
      name: 'test_renders',
      help: 'renders of this registry',
      registers: [app.metrics.registry],
      collect() {
        renders += 1;
        this.set(renders);
      },
    });
    return () => renders;
  }

  test('a flood of concurrent scrapes renders the registry once per prometheusCacheInterval', async () => {
    const app = await proxy({ prometheusCacheInterval: 60_000 });
    const renders = countRenders(app);
    const agent = request.agent(app);
    const answers = await Promise.all(
      Array.from({ length: 100 }, () => agent.get(PATH).set('Authorization', CLIENT_KEY)),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(new Set(answers.map((a) => a.text)).size).toBe(1);
    for (let i = 0; i < 20; i++) await scrape(app);
    expect(renders()).toBe(1);
    const text = await scrape(app);
    for (const name of [
      'flags_proxy_up',
      'last_metrics_update_epoch_timestamp_ms',
      'last_metrics_fetch_epoch_timestamp_ms',
    ])
      expect(text).toMatch(new RegExp(`^${name} \\d+`, 'm'));
  });

  test('with prometheusCacheInterval 0 every scrape renders', async () => {
    const app = await proxy({ prometheusCacheInterval: 0 });
    const renders = countRenders(app);
    for (let i = 0; i < 3; i++) await scrape(app);
    expect(renders()).toBe(3);
  });
});
