import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { Exposition } from '../../support/exposition';
import { sampleFeatures } from '../../support/fixtures';
import { CLIENT_KEY, everyEnvironmentReady, proxyFor, waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

const UP_DEV = '*:development.upstream-dev-secret';
const UP_PROD = '*:production.upstream-prod-secret';

let upstream: TestUpstream;
const apps: ProxyApp[] = [];

afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await upstream.stop();
});

async function scrape(app: ProxyApp): Promise<Exposition> {
  const res = await request(app).get('/internal-backstage/metrics');
  expect(res.status).toBe(200);
  return new Exposition(res.text);
}

describe('the series a dashboard reads per environment and per budget', () => {
  test('fetch failures and definitions age are labelled by environment, each its own', async () => {
    upstream = await new TestUpstream(sampleFeatures(), UP_DEV).start();
    upstream.addToken(UP_PROD, sampleFeatures());
    const started = Date.now();
    const app = proxyFor(upstream, { flagsApiToken: `${UP_DEV},${UP_PROD}`, clientKeys: ['plain-key'] });
    apps.push(app);
    await everyEnvironmentReady(app);

    let text = await scrape(app);
    expect(text.types.get('flags_proxy_environment_fetch_errors_total')).toBe('counter');
    expect(text.types.get('flags_proxy_environment_definitions_age_seconds')).toBe('gauge');
    expect(text.value('flags_proxy_environment_fetch_errors_total', { environment: 'development' })).toBe(0);
    expect(text.value('flags_proxy_environment_fetch_errors_total', { environment: 'production' })).toBe(0);
    for (const environment of ['development', 'production']) {
      const age = text.value('flags_proxy_environment_definitions_age_seconds', { environment }) ?? -1;
      expect(age).toBeGreaterThanOrEqual(0);
      expect(age).toBeLessThanOrEqual((Date.now() - started) / 1000);
    }

    // the upstream stops accepting production's token: only production's fetches fail
    upstream.removeToken(UP_PROD);
    await waitFor(
      async () =>
        ((await scrape(app)).value('flags_proxy_environment_fetch_errors_total', {
          environment: 'production',
        }) ?? 0) >= 2,
    );
    text = await scrape(app);
    expect(text.value('flags_proxy_environment_fetch_errors_total', { environment: 'development' })).toBe(0);
    // production's definitions are no longer confirmed: their age grows past development's
    await waitFor(async () => {
      const now = await scrape(app);
      const prod =
        now.value('flags_proxy_environment_definitions_age_seconds', { environment: 'production' }) ?? 0;
      const dev =
        now.value('flags_proxy_environment_definitions_age_seconds', { environment: 'development' }) ?? 0;
      return prod > dev + 0.3;
    });
  });

  test('one environment is labelled too, and the memory budgets and stream limit are served', async () => {
    upstream = await new TestUpstream(sampleFeatures()).start();
    const app = proxyFor(upstream, { maxStreams: 7 });
    apps.push(app);
    await app.whenReady();
    const agent = request.agent(app);
    for (let i = 0; i < 3; i++)
      await agent.get('/proxy?userId=7').set('Authorization', CLIENT_KEY).expect(200);

    const text = await scrape(app);
    const environment = app.environments.first.name;
    expect(text.value('flags_proxy_environment_fetch_errors_total', { environment })).toBe(0);
    expect(text.find('flags_proxy_environment_definitions_age_seconds')).toHaveLength(1);
    expect(text.types.get('flags_proxy_memory_budget_bytes')).toBe('gauge');
    expect(text.value('flags_proxy_memory_budget_bytes', { budget: 'answer_cache' })).toBe(32 * 1024 * 1024);
    expect(text.value('flags_proxy_memory_budget_bytes', { budget: 'memo' })).toBe(16 * 1024 * 1024);
    expect(text.types.get('flags_proxy_memory_used_bytes')).toBe('gauge');
    // the same context three times: its answer is kept
    expect(text.value('flags_proxy_memory_used_bytes', { budget: 'answer_cache' })).toBeGreaterThan(0);
    expect(text.value('flags_proxy_memory_used_bytes', { budget: 'memo' })).toBeGreaterThanOrEqual(0);
    expect(text.value('flags_proxy_event_streams_limit')).toBe(7);
  });
});
