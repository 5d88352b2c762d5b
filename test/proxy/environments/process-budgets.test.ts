/**
 * One budget per app: change streams, evaluation memory (answer caches, memos, body buffers) and
 * project views are shared by every environment and view of an app; two apps keep their own. And
 * a scrape shows only its key's environment.
 */
import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { SharedBudget } from '../../../src/proxy/budgets/shared-budget';
import { AnswerCache, Doorkeeper } from '../../../src/proxy/engine/answer-cache';
import { ViewBudget } from '../../../src/proxy/environments/view-budget';
import { LoopbackServers } from '../../support/listen';
import { proxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

const UP_DEV = '*:development.upstream-dev-secret';
const UP_PROD = '*:production.upstream-prod-secret';

const on = (name: string, project = 'default') => ({
  name,
  enabled: true,
  project,
  strategies: [{ name: 'default' }],
});

const DEV: FeaturesPayload = {
  version: 2,
  features: [
    on('dev-flag'),
    on('shop-flag', 'shop'),
    {
      name: 'for-pro',
      enabled: true,
      project: 'default',
      strategies: [
        { name: 'default', constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }] },
      ],
    },
  ],
};
const PROD: FeaturesPayload = { version: 2, features: [on('prod-flag'), on('shared-flag')] };
const SHOP_KEY = 'shop:development.shop-key-1';

let upstream: TestUpstream;
const apps: ProxyApp[] = [];
const servers = new LoopbackServers();

beforeEach(async () => {
  upstream = await new TestUpstream(DEV, UP_DEV).start();
  upstream.addToken(UP_PROD, PROD);
});

afterEach(async () => {
  await servers.closeAll();
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await upstream.stop();
});

async function twoEnvironments(options: Parameters<typeof proxyFor>[1] = {}): Promise<ProxyApp> {
  const app = proxyFor(upstream, {
    flagsApiToken: `${UP_DEV},${UP_PROD}`,
    clientKeys: ['dev-key@development', 'prod-key@production', SHOP_KEY],
    enableAllEndpoint: true,
    ...options,
  });
  apps.push(app);
  // every environment, not only the first to be ready
  await Promise.all(app.environments.environments.map((e) => e.features.whenReady()));
  return app;
}

/** An open change stream, read until it ends; `ended` resolves true when the server ended it. */
async function openStream(url: string, key: string) {
  const controller = new AbortController();
  const res = await fetch(`${url}/ofrep/v1/flag-changes`, {
    headers: { Authorization: key },
    signal: controller.signal,
  });
  let received = '';
  const ended =
    res.status === 200
      ? (async () => {
          const reader = res.body!.getReader();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) return true;
            received += Buffer.from(value).toString('utf8');
          }
        })().catch(() => false)
      : Promise.resolve(false);
  return {
    res,
    text: () => received,
    ended,
    close: async () => {
      controller.abort();
      await ended;
    },
  };
}

describe('change streams: one limit for every environment of the app', () => {
  test('with FLAGS_MAX_STREAMS=2 the third stream across two environments is refused with 503', async () => {
    const app = await twoEnvironments({ maxStreams: 2 });
    const url = await servers.listen(app);
    const dev = await openStream(url, 'dev-key');
    const prod = await openStream(url, 'prod-key');
    try {
      expect([dev.res.status, prod.res.status]).toEqual([200, 200]);
      await waitFor(() => dev.text().includes(': connected') && prod.text().includes(': connected'));
      for (const key of ['prod-key', 'dev-key']) {
        const third = await openStream(url, key);
        expect(third.res.status).toBe(503);
        expect(third.res.headers.get('retry-after')).toBe('5');
        const body = (await third.res.json()) as { name: string; message: string };
        expect(body.name).toBe('NotReady');
        expect(body.message).toContain('Too many open change streams (2, every environment together');
      }
      const metrics = await request(app)
        .get('/proxy/internal-backstage/prometheus')
        .set('Authorization', 'dev-key');
      expect(metrics.text).toMatch(/^flags_proxy_event_streams 2$/m);
      expect(metrics.text).toMatch(/^flags_proxy_event_streams_refused_total\{reason="limit"\} 2$/m);
      // a stream of one environment closing frees a slot for the other
      await dev.close();
      await waitFor(() => app.budget.streams.size === 1);
      const again = await openStream(url, 'prod-key');
      expect(again.res.status).toBe(200);
      await again.close();
    } finally {
      await dev.close();
      await prod.close();
    }
  });

  test('two apps in one process keep their own stream limits', async () => {
    const a = await twoEnvironments({ maxStreams: 1 });
    const b = await twoEnvironments({ maxStreams: 1 });
    const [urlA, urlB] = [await servers.listen(a), await servers.listen(b)];
    const first = await openStream(urlA, 'dev-key');
    const other = await openStream(urlB, 'prod-key');
    try {
      expect([first.res.status, other.res.status]).toEqual([200, 200]);
      expect((await openStream(urlA, 'prod-key')).res.status).toBe(503);
    } finally {
      await first.close();
      await other.close();
    }
  });
});

describe('evaluation memory: one budget for every environment and project view of the app', () => {
  /** The same request twice: kept in the answer cache on its second sighting. */
  const twice = async (app: ProxyApp, key: string) => {
    for (let i = 0; i < 2; i++) {
      const res = await request(app).get('/proxy/all?userId=bob&plan=pro').set('Authorization', key);
      expect(res.status).toBe(200);
    }
  };

  test('answers and memo rows of each environment and view are counted in the app’s one budget', async () => {
    const app = await twoEnvironments();
    const { answers, memo, budgets } = app.budget.evaluation;
    expect(answers.budget.maxBytes).toBe(budgets.answerCacheBytes);
    const kept: number[] = [answers.budget.size];
    for (const key of ['dev-key', 'prod-key', SHOP_KEY]) {
      await twice(app, key);
      kept.push(answers.budget.size);
    }
    // one more answer in the one budget per environment and per view
    expect(kept).toEqual([kept[0], kept[0] + 1, kept[0] + 2, kept[0] + 3]);
    expect(answers.budget.bytes).toBeGreaterThan(0);
    expect(answers.budget.bytes).toBeLessThanOrEqual(budgets.answerCacheBytes);
    // `for-pro` reads `plan` only: its result for `pro` is a memo row of development's
    expect(memo.size).toBeGreaterThan(0);
    expect(memo.bytes).toBeLessThanOrEqual(budgets.memoBytes);
  });

  test('two apps in one process keep their own budgets', async () => {
    const a = await twoEnvironments();
    const b = await twoEnvironments();
    expect(a.budget).not.toBe(b.budget);
    const before = b.budget.evaluation.answers.budget.size;
    await twice(a, 'dev-key');
    expect(a.budget.evaluation.answers.budget.size).toBeGreaterThan(0);
    expect(b.budget.evaluation.answers.budget.size).toBe(before);
  });

  test('a full shared budget takes entries from each holder in turn, so a new holder still keeps its own', () => {
    const budget = new SharedBudget(10_000, 20);
    const shared = { budget, doorkeeper: new Doorkeeper(100) };
    const old = new AnswerCache<string>(shared);
    for (let i = 0; i < 20; i++) old.set(`old-${i}`, 'v', 100);
    expect(budget.size).toBe(20);
    const fresh = new AnswerCache<string>(shared);
    for (let i = 0; i < 10; i++) fresh.set(`new-${i}`, 'v', 100);
    expect(budget.size).toBe(20);
    expect(fresh.size).toBeGreaterThanOrEqual(5);
    expect(old.size + fresh.size).toBe(20);
    expect(fresh.get('new-9')).toBe('v');
    // a closed holder gives everything back
    old.close();
    expect(budget.size).toBe(fresh.size);
    expect(budget.bytes).toBe(fresh.totalBytes);
  });
});

describe('project views: kept per app', () => {
  test('40 project scopes used in turn keep their views: none is dropped and rebuilt', async () => {
    const projects = Array.from({ length: 40 }, (_, i) => `p${i}`);
    const many = await new TestUpstream(
      { version: 2, features: projects.map((p) => on(`flag-${p}`, p)) },
      UP_DEV,
    ).start();
    try {
      const keys = projects.map((p, i) => `${p}:development.view-key-${i}`);
      const app = proxyFor(many, { flagsApiToken: UP_DEV, clientKeys: keys });
      apps.push(app);
      await app.whenReady();
      const firstView = app.environments.serving('development', ['p0']);
      for (let round = 0; round < 2; round++) {
        for (const [i, key] of keys.entries()) {
          const res = await request(app).get('/proxy').set('Authorization', key);
          expect(res.status).toBe(200);
          expect((res.body as { toggles: { name: string }[] }).toggles.map((t) => t.name)).toEqual([
            `flag-p${i}`,
          ]);
        }
      }
      expect(app.environments.serving('development', ['p0'])).toBe(firstView);
      expect(app.budget.views.size).toBe(40);
    } finally {
      await many.stop();
    }
  });
});

describe('the view budget', () => {
  test('drops the least recently used view beyond its count or the toggles its views hold together', () => {
    const dropped: string[] = [];
    const views = new ViewBudget<{ name: string; toggles: number }>(3, 10);
    const envA = {};
    const envB = {};
    const use = (owner: object, name: string, toggles = 2) =>
      views.get(
        owner,
        name,
        () => ({ name, toggles }),
        (v) => v.toggles,
        (v) => dropped.push(v.name),
      );
    const a1 = use(envA, 'p1');
    use(envB, 'p1');
    use(envA, 'p2');
    expect(use(envA, 'p1')).toBe(a1); // kept, and now the most recently used
    use(envB, 'p3'); // a fourth view: the least recently used (envB's p1) goes
    expect(dropped).toEqual(['p1']);
    expect(views.size).toBe(3);
    // 8 toggles more: over 10 together, the least recently used go until they fit
    use(envA, 'big', 8);
    expect(dropped).toEqual(['p1', 'p2', 'p1']);
    expect(views.size).toBe(2);
    views.dropAll(envB);
    expect(dropped).toEqual(['p1', 'p2', 'p1', 'p3']);
    expect(views.size).toBe(1);
  });
});

describe('Prometheus: a key sees its own environment', () => {
  const scrape = async (app: ProxyApp, key: string) => {
    const res = await request(app).get('/proxy/internal-backstage/prometheus').set('Authorization', key);
    expect(res.status).toBe(200);
    return res.text;
  };

  test('per-environment series are those of the key’s environment; process-wide series stay', async () => {
    const app = await twoEnvironments();
    await request(app).get('/proxy').set('Authorization', 'prod-key').expect(200);
    const dev = await scrape(app, 'dev-key');
    expect(dev).toContain('flags_proxy_environment_toggles{environment="development"} 3');
    expect(dev).not.toContain('environment="production"');
    // the specification's unlabelled series describe the first upstream token: development's
    expect(dev).toMatch(/^flags_proxy_toggles 3$/m);
    const prod = await scrape(app, 'prod-key');
    expect(prod).toContain('flags_proxy_environment_toggles{environment="production"} 2');
    expect(prod).toContain('flags_proxy_environment_ready{environment="production"} 1');
    expect(prod).not.toContain('environment="development"');
    expect(prod).not.toMatch(/^flags_proxy_toggles /m);
    expect(prod).not.toContain('last_metrics_fetch_epoch_timestamp_ms');
    expect(prod).not.toContain('flags_proxy_upstream_fetch_errors_total');
    for (const text of [dev, prod]) {
      expect(text).toMatch(/^flags_proxy_up 1$/m);
      expect(text).toMatch(/^flags_proxy_event_streams 0$/m);
      expect(text).toMatch(
        /^flags_proxy_http_requests_total\{method="GET",route="\/proxy",status="200"\} 1$/m,
      );
      expect(text).toContain('process_cpu_user_seconds_total');
    }
    // a project-limited key of development sees development's
    const shop = await scrape(app, SHOP_KEY);
    expect(shop).toContain('environment="development"');
    expect(shop).not.toContain('environment="production"');
  });
});
