import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { Exposition } from '../../support/exposition';
import { sampleFeatures } from '../../support/fixtures';
import { CLIENT_KEY, proxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type CapturedRequest } from '../../support/upstream';

// Unleash Edge's names, types and labels, as Edge's source declares them (unleash-edge-http-client,
// unleash-edge-metrics): the series its dashboards and alerts read.
const EDGE_UPSTREAM_LABELS = ['app_name', 'instance_id', 'status_code'];

let upstream: TestUpstream;
const apps: ProxyApp[] = [];

beforeEach(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
});

afterEach(async () => {
  upstream.hang = false;
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await upstream.stop();
});

function proxy(options: Parameters<typeof proxyFor>[1] = {}): ProxyApp {
  const app = proxyFor(upstream, options);
  apps.push(app);
  return app;
}

/** The backstage scrape Edge's chart's ServiceMonitor reads: keyless. */
async function scrape(app: ProxyApp): Promise<Exposition> {
  const res = await request(app).get('/internal-backstage/metrics');
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain/);
  return new Exposition(res.text);
}

function identity(app: ProxyApp): { app_name: string; instance_id: string } {
  return { app_name: app.proxyConfig.flagsAppName, instance_id: app.proxyConfig.flagsInstanceId };
}

/** Waits until the proxy has taken every answer so far: its next fetch is held by the upstream. */
async function quiesce(): Promise<void> {
  const answered = upstream.featureRequests().length;
  upstream.hang = true;
  await waitFor(() => upstream.featureRequests().length > answered, 10_000);
}

describe("Unleash Edge's series on /internal-backstage/metrics", () => {
  test('client_feature_fetch times every definitions fetch the upstream answered, and client_feature_fetch_failures counts the failed ones, by status', async () => {
    const app = proxy({ upstreamRequestTimeout: 2 });
    await app.whenReady();
    const failingFrom = upstream.featureRequests().length;
    upstream.fault = { status: 500, body: 'boom' };
    await waitFor(() => app.features.stats.fetchErrors > 0, 10_000);
    upstream.fault = undefined;
    const failingUntil = upstream.featureRequests().length;
    // one answer after the fault (a 304: nothing changed), taken by the proxy
    await waitFor(() => upstream.featureRequests().length > failingUntil + 1, 10_000);
    await quiesce();

    // what the upstream answered, request by request (the last one is held, not answered)
    const answered = upstream.featureRequests().slice(0, -1);
    const statusOf = (r: CapturedRequest, i: number): string =>
      i >= failingFrom && i < failingUntil ? '500' : r.headers['if-none-match'] === undefined ? '200' : '304';
    const expected = new Map<string, number>();
    answered.forEach((r, i) => expected.set(statusOf(r, i), (expected.get(statusOf(r, i)) ?? 0) + 1));
    expect(expected.get('200')).toBe(1);
    // the SDK's HTTP client asks again twice after a 5xx: three answers, three observations
    expect(expected.get('500')).toBe(3);
    expect(expected.get('304')).toBeGreaterThanOrEqual(1);

    const text = await scrape(app);
    expect(text.types.get('client_feature_fetch')).toBe('histogram');
    expect(text.types.get('client_feature_fetch_failures')).toBe('gauge');
    const labels = identity(app);
    for (const [status, count] of expected) {
      const set = { status_code: status, ...labels };
      expect(text.value('client_feature_fetch_count', set)).toBe(count);
      expect(text.value('client_feature_fetch_bucket', { ...set, le: '+Inf' })).toBe(count);
      const sum = text.value('client_feature_fetch_sum', set) ?? -1;
      expect(sum).toBeGreaterThanOrEqual(0);
      // milliseconds: each answer came within the 2 s timeout
      expect(sum).toBeLessThan(count * 2000);
    }
    expect(text.find('client_feature_fetch_count').length).toBe(expected.size);
    // Edge's buckets, in milliseconds
    const bounds = text.find('client_feature_fetch_bucket', { status_code: '200' }).map((s) => s.labels.le);
    expect(bounds).toEqual(['1', '2', '5', '10', '20', '50', '100', '200', '500', '1000', '5000', '+Inf']);
    for (const sample of text.find('client_feature_fetch_count'))
      expect(Object.keys(sample.labels).sort()).toEqual(EDGE_UPSTREAM_LABELS);

    // failures: the 500s only; 200 and 304 are no failures
    expect(text.value('client_feature_fetch_failures', { status_code: '500', ...labels })).toBe(3);
    expect(text.find('client_feature_fetch_failures').length).toBe(1);
  }, 20_000);

  test('client_register_failures counts the registrations of the proxy the upstream refused, by status', async () => {
    upstream.usageStatus = (path) => (path === '/api/client/register' ? 503 : undefined);
    const app = proxy();
    await app.whenReady();
    await waitFor(() => app.features.stats.registerFailures.size > 0);
    const registrations = upstream.posted('/api/client/register');
    expect(registrations).toHaveLength(1);

    const text = await scrape(app);
    expect(text.types.get('client_register_failures')).toBe('gauge');
    expect(text.value('client_register_failures', { status_code: '503', ...identity(app) })).toBe(1);
    expect(text.find('client_register_failures')).toHaveLength(1);
  });

  test("a client SDK's forwarded registration the upstream refuses is not the proxy's own", async () => {
    const app = proxy({ metricsInterval: 3_600_000 });
    await app.whenReady();
    await waitFor(() => upstream.posted('/api/client/register').length === 1);
    // from now on the upstream refuses registrations: only the forwarded one meets it
    upstream.usageStatus = (path) => (path === '/api/client/register' ? 400 : undefined);
    await request(app)
      .post('/proxy/client/register')
      .set('Authorization', CLIENT_KEY)
      .send({ appName: 'some-sdk', instanceId: 'pod-1', strategies: [] })
      .expect(202);
    await app.clientUsage.forwarder.flush();
    expect(upstream.posted('/api/client/register')).toHaveLength(2);

    const text = await scrape(app);
    expect(text.find('client_register_failures')).toEqual([]);
    expect(
      text.value('flags_proxy_client_usage_forwards_total', { path: 'client/register', result: 'refused' }),
    ).toBe(1);
  });

  test('client_register_failures stays empty while the upstream accepts the registration', async () => {
    const app = proxy();
    await app.whenReady();
    await waitFor(() => upstream.posted('/api/client/register').length === 1);
    const text = await scrape(app);
    expect(text.types.get('client_register_failures')).toBe('gauge');
    expect(text.find('client_register_failures')).toEqual([]);
  });

  test('token_validation_failures counts validation calls the upstream did not answer 200; a token it refuses is no failure', async () => {
    const upstreamToken = '*:development.upstream-dev-secret';
    await upstream.stop();
    upstream = await new TestUpstream(sampleFeatures(), upstreamToken).start();
    const app = proxy({ flagsApiToken: upstreamToken, clientKeys: ['plain-key'] });
    await app.whenReady();

    // refused: the upstream answers the call (200) without the token
    const refused = await request(app).get('/proxy').set('Authorization', '*:development.never-issued');
    expect(refused.status).toBe(401);
    expect(upstream.validationCalls()).toEqual([['*:development.never-issued']]);
    let text = await scrape(app);
    expect(text.types.get('token_validation_failures')).toBe('gauge');
    expect(text.find('token_validation_failures')).toEqual([]);

    // the call itself fails: the key cannot be validated now (503)
    upstream.validateFault = { status: 500 };
    const unavailable = await request(app).get('/proxy').set('Authorization', '*:development.not-yet-known');
    expect(unavailable.status).toBe(503);
    const failedCalls = () => upstream.validationCalls().length - 1;
    await waitFor(async () => (await scrape(app)).find('token_validation_failures').length > 0);
    text = await scrape(app);
    expect(failedCalls()).toBeGreaterThanOrEqual(1);
    expect(text.value('token_validation_failures', { status_code: '500', ...identity(app) })).toBe(
      failedCalls(),
    );
    for (const sample of text.find('token_validation_failures'))
      expect(Object.keys(sample.labels).sort()).toEqual(EDGE_UPSTREAM_LABELS);
  });

  test('upstream_version names the server and version the upstream answers with, one label set at a time', async () => {
    upstream.featureHeaders = { 'x-unleash-version': '7.2.1' };
    const app = proxy();
    await app.whenReady();
    let text = await scrape(app);
    expect(text.types.get('upstream_version')).toBe('gauge');
    expect(text.value('upstream_version', { server: 'unleash', version: '7.2.1', ...identity(app) })).toBe(1);

    // an Edge in between now: Edge's header wins
    upstream.featureHeaders = { 'x-edge-version': '20.1.0', 'x-unleash-version': '7.2.1' };
    const seen = upstream.featureRequests().length;
    // a fetch answered with the new headers, taken by the proxy: its next fetch has started
    await waitFor(() => upstream.featureRequests().length > seen + 1);
    text = await scrape(app);
    expect(text.find('upstream_version')).toEqual([
      { name: 'upstream_version', labels: { server: 'edge', version: '20.1.0', ...identity(app) }, value: 1 },
    ]);
  });

  test('the keyed scrape of the specification carries them too, beside its own three series', async () => {
    upstream.featureHeaders = { 'x-unleash-version': '7.2.1' };
    const app = proxy();
    await app.whenReady();
    const res = await request(app)
      .get('/proxy/internal-backstage/prometheus')
      .set('Authorization', CLIENT_KEY);
    expect(res.status).toBe(200);
    const text = new Exposition(res.text);
    expect(text.types.get('flags_proxy_up')).toBe('counter');
    expect(text.value('flags_proxy_up')).toBe(1);
    expect(text.types.get('last_metrics_update_epoch_timestamp_ms')).toBe('gauge');
    expect(text.types.get('last_metrics_fetch_epoch_timestamp_ms')).toBe('gauge');
    expect(text.types.get('client_feature_fetch')).toBe('histogram');
    expect(text.value('client_feature_fetch_count', { status_code: '200', ...identity(app) })).toBe(1);
    expect(text.value('upstream_version', { server: 'unleash', version: '7.2.1', ...identity(app) })).toBe(1);
  });

  test('upstream_version has no sample while the upstream names no version', async () => {
    const app = proxy();
    await app.whenReady();
    const text = await scrape(app);
    expect(text.types.get('upstream_version')).toBe('gauge');
    expect(text.find('upstream_version')).toEqual([]);
  });

  test("http_requests_total and http_server_duration_milliseconds are the requests, labelled as Edge's", async () => {
    const app = proxy();
    await app.whenReady();
    await request(app).get('/proxy').set('Authorization', CLIENT_KEY).expect(200);
    await request(app).get('/proxy').set('Authorization', CLIENT_KEY).expect(200);
    await request(app).get('/api/frontend').set('Authorization', 'wrong').expect(401);
    await request(app).get('/no/such/path').expect(404);
    await request(app).get('/internal-backstage/health').expect(200);

    const text = await scrape(app);
    expect(text.types.get('http_requests_total')).toBe('counter');
    expect(text.types.get('http_server_duration_milliseconds')).toBe('histogram');
    const labels = identity(app);
    const proxyOk = { method: 'GET', endpoint: '/proxy', status: '200', ...labels };
    expect(text.value('http_requests_total', proxyOk)).toBe(2);
    expect(
      text.value('http_requests_total', { method: 'GET', endpoint: '/{unknown}', status: '404', ...labels }),
    ).toBe(1);
    expect(
      text.value('http_requests_total', { method: 'GET', endpoint: 'unmatched', status: '401', ...labels }),
    ).toBe(1);
    // the backstage (probes and scrapes) is left out, as Edge leaves it out
    expect(
      text.find('http_requests_total').filter((s) => s.labels.endpoint.includes('internal-backstage')),
    ).toEqual([]);
    expect(text.find('http_requests_total')).toHaveLength(3);
    for (const sample of text.find('http_requests_total'))
      expect(Object.keys(sample.labels).sort()).toEqual([
        'app_name',
        'endpoint',
        'instance_id',
        'method',
        'status',
      ]);

    expect(text.value('http_server_duration_milliseconds_count', proxyOk)).toBe(2);
    expect(text.value('http_server_duration_milliseconds_bucket', { ...proxyOk, le: '+Inf' })).toBe(2);
    const bounds = text.find('http_server_duration_milliseconds_bucket', proxyOk).map((s) => s.labels.le);
    expect(bounds).toEqual([
      '1',
      '2.5',
      '5',
      '10',
      '25',
      '50',
      '100',
      '250',
      '500',
      '1000',
      '2500',
      '5000',
      '+Inf',
    ]);
    // milliseconds, of the same requests our own series counts in seconds
    const seconds = text.value('flags_proxy_http_request_duration_seconds_sum', {
      method: 'GET',
      route: '/proxy',
      status: '200',
    });
    expect(text.value('http_server_duration_milliseconds_sum', proxyOk)).toBeCloseTo(
      (seconds ?? -1) * 1000,
      6,
    );
  });
});
