import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ProxyApp } from '../../../src/proxy/app';
import { RequestSeries } from '../../../src/proxy/prometheus/request-series';
import {
  SAMPLE_INTERVAL_MS,
  SAMPLES_KEPT,
  StatusSampler,
  bucketQuantile,
} from '../../../src/proxy/status/status-sampler';
import { requestKind } from '../../../src/proxy/status/request-kinds';
import type { StatusReport } from '../../../src/proxy/status/status-report';
import { sampleFeatures } from '../../support/fixtures';
import { readyProxyFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

const DEV_TOKEN = '*:development.status-json-dev-secret-0d5b71c2';
const PLAIN_TOKEN = 'status-json-plain-upstream-secret-77aa';
const CLIENT_KEY = 'status-json-client-key-4be9';
const ODD_NAME = '<img src=x onerror="alert(1)">&amp;';
const SECRETS = [DEV_TOKEN, PLAIN_TOKEN, CLIENT_KEY, 'status-json-dev-secret-0d5b71c2'];

describe('{base}/internal-backstage/status.json', () => {
  let upstream: TestUpstream;
  let app: ProxyApp;
  let server: http.Server;
  let origin: string;

  const start = async (options: Record<string, unknown> = {}) => {
    app = await readyProxyFor(upstream, {
      flagsApiToken: `${DEV_TOKEN},${PLAIN_TOKEN}`,
      environment: ODD_NAME,
      clientKeys: [CLIENT_KEY],
      proxyBasePath: '/base',
      ...options,
    });
    server = http.createServer(app.listener);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  beforeEach(async () => {
    const plain = sampleFeatures();
    plain.features = plain.features.slice(0, 3);
    upstream = await new TestUpstream(sampleFeatures(), DEV_TOKEN).addToken(PLAIN_TOKEN, plain).start();
  });

  afterEach(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await app.close();
    await upstream.stop();
  });

  it('describes the process and every environment, and says nothing secret', async () => {
    await start();
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${origin}/base/proxy?userId=u${i}`, {
        headers: { authorization: CLIENT_KEY },
      });
      expect(res.status).toBe(200);
    }
    const res = await fetch(`${origin}/base/internal-backstage/status.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toMatch(
      /^default-src 'self'; script-src 'self'; style-src 'self';/,
    );
    expect(res.headers.get('cache-control')).toBe('no-store');
    const text = await res.text();
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    const report = JSON.parse(text) as StatusReport;
    expect(report.process).toMatchObject({
      contract: "the specification's",
      basePath: '/base',
      workers: 1,
      worker: null,
      ready: true,
    });
    expect(report.process.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(report.process.memory.answerCache.limit).toBeGreaterThan(0);
    expect(report.environments.map((e) => [e.name, e.ready, e.definitions, e.fetch])).toEqual([
      ['development', true, sampleFeatures().features.length, 'ok'],
      [ODD_NAME, true, 3, 'ok'],
    ]);
    expect(report.environments[0].tokens?.[0]).toEqual({
      token: '*:development.****',
      type: 'client',
      environment: 'development',
      projects: ['*'],
      status: 'Validated',
    });
    expect(report.requests).toEqual([{ kind: 'frontend API', status: '2xx', count: 5 }]);
    const { plots } = report;
    expect(plots.intervalSeconds).toBe(SAMPLE_INTERVAL_MS / 1000);
    for (const series of [plots.p50, plots.p99, plots.notModifiedShare, plots.validationWaiters])
      expect(series).toHaveLength(plots.t.length);
    // (a series per kind and status once the window holds its requests: the sampler's tests below)
    for (const series of plots.requests) expect(series.perSecond).toHaveLength(plots.t.length);
    expect(plots.t.length).toBeLessThanOrEqual(SAMPLES_KEPT + 1);
  });

  it('a flood of loads is answered from one rendering per second, whatever the query', async () => {
    await start();
    const began = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        fetch(`${origin}/base/internal-backstage/status.json?n=${i}&x=${'y'.repeat(i * 10)}`).then((r) =>
          r.text(),
        ),
      ),
    );
    const seconds = Math.ceil((Date.now() - began) / 1000);
    const generated = new Set(answers.map((a) => (JSON.parse(a) as StatusReport).generatedAt));
    // one rendering per second the flood lasted (however slow the host), never one per load
    expect(generated.size).toBeGreaterThanOrEqual(1);
    expect(generated.size).toBeLessThanOrEqual(seconds + 1);
    expect(generated.size).toBeLessThan(answers.length);
  });

  it('the page and its assets carry the CSP, and the page has no inline script or style', async () => {
    await start();
    const page = await fetch(`${origin}/base/internal-backstage/status`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    const html = await page.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(assets.sort()).toEqual([
      '/base/internal-backstage/status/icon.svg',
      '/base/internal-backstage/status/status.css',
      '/base/internal-backstage/status/status.js',
      '/base/internal-backstage/status/uplot.css',
      '/base/internal-backstage/status/uplot.js',
    ]);
    expect(html).toContain('data-json="/base/internal-backstage/status.json"');
    for (const asset of assets) {
      const res = await fetch(`${origin}${asset}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
      const type = asset.endsWith('.js')
        ? /^text\/javascript/
        : asset.endsWith('.svg')
          ? /^image\/svg/
          : /^text\/css/;
      expect(res.headers.get('content-type')).toMatch(type);
    }
  });

  it('DISABLE_STATUS_ENDPOINT=true takes the page, its data and its assets away', async () => {
    await start({ disableStatusEndpoint: true });
    for (const p of ['/status', '/status.json', '/status/status.js', '/status/uplot.js'])
      expect((await fetch(`${origin}/base/internal-backstage${p}`)).status).toBe(404);
    expect((await fetch(`${origin}/base/internal-backstage/health`)).status).toBe(200);
  });

  it('with the tokens endpoint off, it lists no tokens either', async () => {
    await start({ disableTokensEndpoint: true });
    const report = (await (
      await fetch(`${origin}/base/internal-backstage/status.json`)
    ).json()) as StatusReport;
    expect(report.environments.map((e) => e.tokens)).toEqual([null, null]);
  });
});

describe('the status sampler', () => {
  afterEach(() => jest.useRealTimers());

  it('keeps 15 minutes of samples at most, however long it runs', () => {
    jest.useFakeTimers({ now: 1_800_000_000_000 });
    const series = new RequestSeries({ requests: 'r', duration: 'd' }, [0.001, 0.01, 0.1]);
    const sampler = new StatusSampler(series, undefined);
    try {
      const entry = series.entry('GET', '/proxy', 200);
      for (let minute = 0; minute < 40; minute++) {
        for (let i = 0; i < 60; i++) entry.observe(0.005);
        jest.advanceTimersByTime(60_000);
      }
      const plots = sampler.plots();
      // the ring alone: the counters now were sampled this very moment
      expect(plots.t).toHaveLength(SAMPLES_KEPT);
      expect(SAMPLES_KEPT * SAMPLE_INTERVAL_MS).toBe(15 * 60 * 1000);
      expect(plots.t[plots.t.length - 1] - plots.t[0]).toBe((SAMPLES_KEPT - 1) * (SAMPLE_INTERVAL_MS / 1000));
      for (const series of [plots.p50, plots.validationQueued, plots.requests[0].perSecond])
        expect(series).toHaveLength(SAMPLES_KEPT);
      // 60 requests at the start of every minute: the window holds 14 or 15 of those bursts
      const seconds = SAMPLE_INTERVAL_MS / 1000;
      const counted = plots.requests[0].perSecond.reduce<number>((sum, v) => sum + (v ?? 0) * seconds, 0);
      expect([14 * 60, 15 * 60]).toContain(Math.round(counted));
      expect(plots.p50.filter((v) => v !== null).every((v) => v !== null && v > 1 && v <= 10)).toBe(true);
      jest.advanceTimersByTime(2_000);
      // two seconds later the counters now are a point of their own
      expect(sampler.plots().t).toHaveLength(SAMPLES_KEPT + 1);
    } finally {
      sampler.close();
    }
  });

  it('estimates quantiles inside the bucket they fall in, as histogram_quantile does', () => {
    const bounds = [0.001, 0.01, 0.1];
    const before = new Float64Array([0, 0, 0, 0]);
    // 50 under 1 ms, 40 in 1–10 ms, 10 in 10–100 ms
    const now = new Float64Array([50, 40, 10, 0]);
    expect(bucketQuantile(0.5, bounds, now, before)).toBeCloseTo(1, 6);
    // rank 99: the 9th of the 10 in (10 ms, 100 ms]: 10 + 90 × 9/10
    expect(bucketQuantile(0.99, bounds, now, before)).toBeCloseTo(91, 6);
    expect(bucketQuantile(0.5, bounds, before, before)).toBeNull();
    expect(bucketQuantile(0.99, bounds, new Float64Array([0, 0, 0, 3]), before)).toBe(100);
  });
});

describe('the kinds of request the page plots', () => {
  it.each([
    ['/proxy', 'frontend API'],
    ['/base/proxy/all', 'frontend API'],
    ['/api/frontend/features/:name', 'frontend API'],
    ['/ofrep/v1/evaluate/flags', 'OFREP'],
    ['/ofrep/v1/flag-changes', 'change streams'],
    ['/api/client/features', 'client API'],
    ['/proxy/client/features', 'client API'],
    ['/proxy/client/metrics', 'usage'],
    ['/api/client/metrics/bulk', 'usage'],
    ['/api/frontend/client/register', 'usage'],
    ['/base/internal-backstage/status.json', 'backstage'],
    ['/proxy/health', 'backstage'],
    ['unmatched', 'refused or unknown'],
    ['/docs/openapi.json', 'other'],
  ])('%s is %s', (route, kind) => {
    expect(requestKind(route)).toBe(kind);
  });
});
