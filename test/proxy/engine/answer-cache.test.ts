import request from 'supertest';
import { Strategy, type Context } from 'unleash-client';
import type { ProxyApp } from '../../../src/proxy/app';
import { AnswerCache, Doorkeeper } from '../../../src/proxy/engine/answer-cache';
import { BodyForms } from '../../../src/proxy/engine/body-forms';
import { SharedBudget } from '../../../src/proxy/budgets/shared-budget';
import type { Outcome } from '../../../src/proxy/engine/outcomes';
import { UsageTally } from '../../../src/proxy/engine/usage-tally';
import { CLIENT_KEY, expressRouted, readyProxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';
import { reportedUsage } from '../../support/usage-reports';

const LAUNCH = Date.parse('2030-01-01T00:00:00.000Z');

function payload(): FeaturesPayload {
  return {
    version: 2,
    features: [
      { name: 'always', enabled: true, strategies: [{ name: 'default' }] },
      {
        name: 'launch',
        enabled: true,
        strategies: [
          {
            name: 'default',
            constraints: [
              { contextName: 'currentTime', operator: 'DATE_AFTER', value: new Date(LAUNCH).toISOString() },
            ],
          },
        ],
      },
      {
        name: 'coin',
        enabled: true,
        strategies: [{ name: 'gradualRolloutRandom', parameters: { percentage: '50' } }],
      },
      {
        name: 'coin-sticky-random',
        enabled: true,
        strategies: [
          { name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'random', groupId: 'g' } },
        ],
      },
      {
        name: 'pro',
        enabled: true,
        strategies: [
          { name: 'default', constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }] },
        ],
      },
      { name: 'custom', enabled: true, strategies: [{ name: 'counting', parameters: {} }] },
    ],
  };
}

class CountingStrategy extends Strategy {
  calls = 0;
  constructor() {
    super('counting');
  }
  override isEnabled(_parameters: unknown, _context: Context): boolean {
    this.calls += 1;
    return true;
  }
}

let upstream: TestUpstream;
const apps: ProxyApp[] = [];

beforeEach(async () => {
  upstream = await new TestUpstream(payload()).start();
});

afterEach(async () => {
  jest.useRealTimers();
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await upstream.stop();
});

async function proxy(counting = new CountingStrategy()): Promise<ProxyApp> {
  const app = await readyProxyFor(upstream, { customStrategies: [counting] });
  apps.push(app);
  return app;
}

const names = (body: { toggles: { name: string }[] }) => body.toggles.map((t) => t.name);
const ask = (app: ProxyApp, query = 'userId=u1&plan=pro') =>
  request(app)
    .get(`/proxy?${query}`)
    .set('authorization', CLIENT_KEY)
    .expect((r) => {
      if (r.status !== 200 && r.status !== 304) throw new Error(`status ${r.status}`);
    });

describe('answers for repeated contexts', () => {
  test('a repeated context is answered 304 from its cached validator without evaluating again', async () => {
    const app = await readyProxyFor(upstream, {});
    apps.push(app);
    // a flag set without chance or the clock, so the answer is a function of the context
    const revision = app.features.revision;
    upstream.setFeatures({
      version: 2,
      features: [payload().features[0], payload().features[4]],
    });
    await waitFor(() => app.features.revision > revision);
    const first = await ask(app);
    expect(String(first.headers.etag)).toMatch(/^W\/"d-/);
    const fast = app.features.fast?.();
    expect(fast).toBeDefined();
    const resolve = jest.spyOn(fast as NonNullable<typeof fast>, 'resolve');
    const res = await ask(app).set('If-None-Match', String(first.headers.etag)).expect(304);
    expect(res.text).toBe('');
    expect(resolve).not.toHaveBeenCalled();
    resolve.mockRestore();
  });

  test("an answer that reads the clock is validated by the clock's window among its dates", async () => {
    const app = await readyProxyFor(upstream, {});
    apps.push(app);
    const revision = app.features.revision;
    upstream.setFeatures({ version: 2, features: [payload().features[0], payload().features[1]] });
    await waitFor(() => app.features.revision > revision);
    const first = await ask(app);
    expect(String(first.headers.etag)).toMatch(/^W\/"d-/);
    expect(names(first.body)).not.toContain('launch');
    const fast = app.features.fast?.();
    const resolve = jest.spyOn(fast as NonNullable<typeof fast>, 'resolve');
    // the clock is still before the launch date: the same window, so no evaluation is needed
    await ask(app).set('If-None-Match', String(first.headers.etag)).expect(304);
    expect(resolve).not.toHaveBeenCalled();
    resolve.mockRestore();
    // with the client's own time past the date, the answer (and its validator) differ
    const timed = await ask(app, 'userId=u1&plan=pro&currentTime=2031-01-01T00:00:00.000Z');
    expect(String(timed.headers.etag)).toMatch(/^W\/"d-/);
    expect(timed.headers.etag).not.toBe(first.headers.etag);
    expect(names(timed.body)).toContain('launch');
  });

  test('a random rollout is never answered from the cache', async () => {
    const app = await proxy();
    const seen = { coin: new Set<boolean>(), sticky: new Set<boolean>() };
    for (let i = 0; i < 60; i += 1) {
      const got = names((await ask(app)).body);
      seen.coin.add(got.includes('coin'));
      seen.sticky.add(got.includes('coin-sticky-random'));
    }
    // 2^-59 chance of a false failure per toggle
    expect([...seen.coin].sort()).toEqual([false, true]);
    expect([...seen.sticky].sort()).toEqual([false, true]);
  });

  test('a custom strategy runs on every request, cached or not', async () => {
    const counting = new CountingStrategy();
    const app = await proxy(counting);
    for (let i = 0; i < 5; i += 1) await ask(app);
    expect(counting.calls).toBe(5);
  });

  test('a date constraint is evaluated again once the clock passes its date', async () => {
    jest.useFakeTimers({
      doNotFake: [
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'requestAnimationFrame',
        'cancelAnimationFrame',
        'requestIdleCallback',
        'cancelIdleCallback',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
        'setTimeout',
        'clearTimeout',
      ],
    });
    jest.setSystemTime(LAUNCH - 60_000);
    const app = await proxy();
    for (let i = 0; i < 3; i += 1) expect(names((await ask(app)).body)).not.toContain('launch');
    jest.setSystemTime(LAUNCH + 1);
    expect(names((await ask(app)).body)).toContain('launch');
    jest.setSystemTime(LAUNCH - 1);
    expect(names((await ask(app)).body)).not.toContain('launch');
  });

  test('new definitions replace cached answers at once', async () => {
    const app = await proxy();
    for (let i = 0; i < 3; i += 1) expect(names((await ask(app)).body)).toContain('pro');
    const revision = app.features.revision;
    upstream.setFeatures({
      version: 2,
      features: payload().features.filter((f) => (f as { name: string }).name !== 'pro'),
    });
    await waitFor(() => app.features.revision > revision);
    expect(names((await ask(app)).body)).not.toContain('pro');
  });

  test('contexts that differ only in a property get their own answers', async () => {
    const app = await proxy();
    for (let i = 0; i < 3; i += 1) {
      expect(names((await ask(app, 'userId=u1&plan=pro')).body)).toContain('pro');
      expect(names((await ask(app, 'userId=u1&plan=free')).body)).not.toContain('pro');
      expect(names((await ask(app, 'userId=u2&plan=free')).body)).not.toContain('pro');
    }
  });
});

describe('custom strategies', () => {
  class MutatingStrategy extends Strategy {
    constructor() {
      super('mutating');
    }
    override isEnabled(_parameters: unknown, context: Context): boolean {
      // code we do not control, changing the context it is given
      context.userId = 'admin';
      if (context.properties) context.properties.plan = 'enterprise';
      return true;
    }
  }

  test('a strategy that changes its context does not change the results of later toggles', async () => {
    upstream.setFeatures({
      version: 2,
      features: [
        { name: 'a-mutating', enabled: true, strategies: [{ name: 'mutating', parameters: {} }] },
        {
          name: 'b-admin-only',
          enabled: true,
          strategies: [{ name: 'userWithId', parameters: { userIds: 'admin' } }],
        },
        {
          name: 'c-enterprise-only',
          enabled: true,
          strategies: [
            {
              name: 'default',
              constraints: [{ contextName: 'plan', operator: 'IN', values: ['enterprise'] }],
            },
          ],
        },
      ],
    });
    const app = await readyProxyFor(upstream, { customStrategies: [new MutatingStrategy()] });
    apps.push(app);
    for (const res of [
      await ask(app, 'userId=u1&plan=pro'),
      await request(app)
        .post('/proxy')
        .set('authorization', CLIENT_KEY)
        .send({ context: { userId: 'u1', properties: { plan: 'pro' } } })
        .expect(200),
    ]) {
      expect(names(res.body)).toEqual(['a-mutating']);
    }
    // OFREP's bulk answer evaluates every flag with one enhanced context: the same holds there
    const ofrep = await request(app)
      .post('/ofrep/v1/evaluate/flags')
      .set('authorization', CLIENT_KEY)
      .send({ context: { targetingKey: 'u1', plan: 'pro' } })
      .expect(200);
    const values = Object.fromEntries(
      (ofrep.body as { flags: { key: string; value?: unknown }[] }).flags.map((f) => [f.key, f.value]),
    );
    expect(values).toEqual({ 'a-mutating': true, 'b-admin-only': false, 'c-enterprise-only': false });
  });
});

describe('GET /proxy through the listener and through Express', () => {
  const strip = (headers: Record<string, unknown>) => {
    const { date: _date, ...rest } = headers;
    return rest;
  };

  test('answers the same both ways: status, headers, body, 304, errors and metrics; the listener without Express', async () => {
    const extra = Array.from({ length: 30 }, (_, i) => ({
      name: `bulk-${i}`,
      enabled: true,
      strategies: [],
    }));
    const features = payload().features.filter(
      (f) => !String((f as { name: string }).name).startsWith('coin'),
    );
    // more than 1 KB of toggles, so the compression middleware has something to compress
    upstream.setFeatures({ version: 2, features: [...features, ...extra] });
    const front = await readyProxyFor(upstream, {});
    // trustProxy sends every request through Express; without X-Forwarded-For the context is the same
    const express = await readyProxyFor(upstream, { trustProxy: true });
    apps.push(front, express);
    const routed = expressRouted(front);
    const cases: { path: string; headers: Record<string, string> }[] = [
      { path: '/proxy?userId=u1&plan=pro', headers: { authorization: CLIENT_KEY } },
      {
        path: '/proxy?userId=u1&plan=pro',
        headers: { authorization: `Bearer ${CLIENT_KEY}`, origin: 'https://app.example' },
      },
      { path: '/proxy?userId=u2', headers: { authorization: CLIENT_KEY, 'accept-encoding': 'gzip' } },
      { path: '/proxy', headers: { authorization: 'wrong' } },
      { path: '/proxy?a=1&a=2', headers: { authorization: CLIENT_KEY } },
      { path: '/proxy/?userId=u1', headers: { authorization: CLIENT_KEY } },
    ];
    for (const c of cases) {
      for (let i = 0; i < 3; i += 1) {
        const [a, b] = await Promise.all(
          [front.listener, express].map((app) => request(app).get(c.path).set(c.headers)),
        );
        expect([c.path, a.status, strip(a.headers)]).toEqual([c.path, b.status, strip(b.headers)]);
        if (a.status === 200) expect(a.text).toBe(b.text);
        if (a.status === 200 && c.headers['accept-encoding'])
          expect(a.headers['content-encoding']).toBe('gzip');
        else expect(Object.keys(a.body as object).sort()).toEqual(Object.keys(b.body as object).sort());
        if (a.headers.etag) {
          const [ra, rb] = await Promise.all(
            [front.listener, express].map((app) =>
              request(app).get(c.path).set(c.headers).set('If-None-Match', String(a.headers.etag)),
            ),
          );
          expect([ra.status, strip(ra.headers)]).toEqual([rb.status, strip(rb.headers)]);
        }
      }
    }
    // the front answered every one of them itself, refusals and malformed queries included
    expect(routed).toEqual([]);
    const scrape = async (app: ProxyApp) =>
      (await request(app).get('/proxy/internal-backstage/prometheus').set('authorization', CLIENT_KEY)).text
        .split('\n')
        .filter((l) => l.startsWith('flags_proxy_http_requests_total'))
        .sort();
    expect(await scrape(front)).toEqual(await scrape(express));
  });
});

describe('the answer cache', () => {
  test('stays within its entry and byte bounds and admits a key on its second sighting only', () => {
    const cache = new AnswerCache<string>({ maxBytes: 10_000, maxEntries: 50, maxSeen: 100 });
    expect(cache.admit('a')).toBe(false);
    expect(cache.admit('a')).toBe(true);
    for (let i = 0; i < 1000; i += 1) {
      cache.set(`k${i}`, 'v', 300);
      expect(cache.size).toBeLessThanOrEqual(50);
      expect(cache.totalBytes).toBeLessThanOrEqual(10_000);
    }
    expect(cache.get('k999')).toBeDefined();
    expect(cache.get('k0')).toBeUndefined();
    cache.set('huge', 'v', 5_000);
    expect(cache.get('huge')).toBeUndefined();
  });

  test('the doorkeeper remembers up to its size of keys seen once, then starts again empty', () => {
    const doorkeeper = new Doorkeeper(1_000);
    const keys = Array.from({ length: 1_000 }, (_, i) => `W/"digest-${i}-${'x'.repeat(i % 40)}"`);
    // first sightings, then every one of them seen before (no two of them taken for one another)
    expect(keys.filter((k) => doorkeeper.admit(k))).toEqual([]);
    expect(keys.every((k) => doorkeeper.admit(k))).toBe(true);
    // a key past its size: it starts again, holding only that key
    expect(doorkeeper.admit('one more')).toBe(false);
    expect(doorkeeper.admit('one more')).toBe(true);
    expect(doorkeeper.admit(keys[0])).toBe(false);
    expect(doorkeeper.admit(keys[0])).toBe(true);
  });

  test('evicts the oldest entry that was not read since eviction last passed it (second chance)', () => {
    const cache = new AnswerCache<string>({ maxBytes: 1_000_000, maxEntries: 3, maxSeen: 100 });
    cache.set('a', 'v', 1);
    cache.set('b', 'v', 1);
    cache.set('c', 'v', 1);
    expect(cache.get('a')).toBeDefined(); // read: survives the next eviction
    cache.set('d', 'v', 1);
    expect(['a', 'b', 'c', 'd'].map((k) => cache.get(k) !== undefined)).toEqual([true, false, true, true]);
    // every entry read: one round clears the flags, then the oldest goes, and the bounds hold
    cache.set('e', 'v', 1);
    expect(cache.size).toBe(3);
    expect(cache.get('e')).toBeDefined();
  });

  test('an entry grows within the budget (its kept forms): counted, given back with it, refused when it cannot fit', () => {
    const cache = new AnswerCache<string>({ maxBytes: 8_000, maxEntries: 10, maxSeen: 100 });
    cache.set('a', 'v', 100);
    const base = cache.totalBytes;
    expect(cache.grow('a', 200)).toBe(true);
    expect(cache.totalBytes).toBe(base + 200);
    expect(cache.grow('missing', 10)).toBe(false);
    // one entry may hold at most an eighth of the budget
    expect(cache.grow('a', 1_000)).toBe(false);
    expect(cache.totalBytes).toBe(base + 200);
    // growing makes room by evicting others, never the budget
    for (const k of ['b', 'c', 'd', 'e', 'f', 'g', 'h']) cache.set(k, 'v', 700);
    expect(cache.get('a')).toBeDefined();
    expect(cache.grow('a', 150)).toBe(true);
    expect(cache.totalBytes).toBeLessThanOrEqual(8_000);
    cache.delete('a');
    cache.close();
    expect(cache.totalBytes).toBe(0);
  });

  test('an entry evicted while making room for its own growth is not grown, and the budget stays exact', () => {
    const shared = new SharedBudget(5_000, 10);
    const cache = new AnswerCache<string>({ budget: shared, doorkeeper: new Doorkeeper(100) });
    cache.set('only', 'v', 300); // 460 bytes with its key, the oldest entry, never read
    for (let i = 0; i < 9; i++) cache.set(`other-${i}`, 'v', 340); // 500 bytes each: 4,960 in all
    expect(cache.totalBytes).toBe(4_960);
    // the room is made by evicting the oldest entry: the growing one itself
    expect(cache.grow('only', 100)).toBe(false);
    expect(cache.get('only')).toBeUndefined();
    expect(cache.totalBytes).toBe(4_500);
    cache.close();
    expect(cache.totalBytes).toBe(0);
    // everything given back: a full-size item fits again
    expect(shared.reserve(5_000)).toBe(true);
  });
});

describe('kept forms of a body', () => {
  test('each form is made once and kept while its growth is granted; refused growth keeps nothing', () => {
    const granted: number[] = [];
    let allow = true;
    const forms = new BodyForms((bytes) => {
      if (allow) granted.push(bytes);
      return allow;
    });
    // a slice of a larger buffer, as zlib often returns: kept as a copy of its own size
    const br = Buffer.alloc(16_384, 7).subarray(100, 108);
    forms.keep('br', br);
    forms.keep('br', Buffer.from('other'));
    expect(forms.get('br')?.equals(br)).toBe(true);
    expect(forms.get('br')?.buffer.byteLength).toBe(8);
    expect(granted).toHaveLength(1);
    expect(granted[0]).toBeGreaterThan(br.length);
    allow = false;
    forms.keep('gzip', Buffer.from('gz'));
    expect(forms.get('gzip')).toBeUndefined();
  });
});

describe('usage counts of evaluated toggles', () => {
  test('count evaluated toggles exactly and never names the definitions do not have', async () => {
    const app = await readyProxyFor(upstream, {});
    // 3 × 4,000 distinct unknown names: answered disabled, never counted or remembered
    const batches = [0, 1, 2].map((b) => Array.from({ length: 4000 }, (_, i) => `n-${b}-${i}`));
    for (const toggles of batches) {
      const res = await request(app).post('/proxy').set('authorization', CLIENT_KEY).send({ toggles });
      expect(res.status).toBe(200);
      const got = (res.body as { toggles: { name: string; enabled: boolean }[] }).toggles;
      expect(got).toHaveLength(4000);
      expect(got.every((t) => !t.enabled)).toBe(true);
    }
    for (let i = 0; i < 3; i += 1) {
      await request(app)
        .post('/proxy')
        .set('authorization', CLIENT_KEY)
        .send({ toggles: ['always', 'n-0-0'] })
        .expect(200);
    }
    await app.close(); // flushes usage upstream
    const counted = new Map<string, { yes: number; no: number }>();
    for (const post of upstream.posted('/api/client/metrics')) {
      const toggles = (post.body as { bucket: { toggles: Record<string, { yes: number; no: number }> } })
        .bucket.toggles;
      for (const [name, c] of Object.entries(toggles)) {
        const sum = counted.get(name) ?? { yes: 0, no: 0 };
        counted.set(name, { yes: sum.yes + c.yes, no: sum.no + c.no });
      }
    }
    expect([...counted.keys()]).toEqual(['always']);
    expect(counted.get('always')).toEqual({ yes: 3, no: 0 });
  });

  test('counts every request, whether evaluated, remembered or a kept answer, across new definitions', async () => {
    const definitions = (enabled: boolean): FeaturesPayload => ({
      version: 2,
      features: [
        {
          name: 'for-u1',
          enabled,
          strategies: [{ name: 'userWithId', parameters: { userIds: 'u1' } }],
          variants: [{ name: 'blue', weight: 1000, stickiness: 'default' }],
        },
        {
          name: 'by-plan',
          enabled: true,
          strategies: [
            { name: 'default', constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }] },
          ],
        },
        { name: 'fixed', enabled: true, strategies: [] },
      ],
    });
    upstream.setFeatures(definitions(true));
    const app = await readyProxyFor(upstream, { refreshInterval: 50 });
    const get = () =>
      request(app).get('/proxy?userId=u1&plan=pro').set('authorization', CLIENT_KEY).expect(200);
    // evaluated, then seen twice (kept), then served from the kept answer
    for (let i = 0; i < 4; i += 1) expect(names((await get()).body)).toEqual(['by-plan', 'fixed', 'for-u1']);
    const revision = app.features.revision;
    upstream.setFeatures(definitions(false));
    await waitFor(() => app.features.revision !== revision);
    for (let i = 0; i < 2; i += 1) expect(names((await get()).body)).toEqual(['by-plan', 'fixed']);
    await app.close(); // flushes usage upstream

    expect(reportedUsage(upstream)).toEqual({
      'for-u1': { yes: 4, no: 2, variants: { blue: 4, disabled: 2 } },
      'by-plan': { yes: 6, no: 0, variants: { disabled: 6 } },
      fixed: { yes: 6, no: 0, variants: { disabled: 6 } },
    });
  });
});

describe('UsageTally', () => {
  const outcome = (name: string, id: number, enabled = true, variant = 'disabled'): Outcome => ({
    name,
    id,
    enabled,
    variant,
    entry: Buffer.from('{}'),
  });

  test('hands over interned counts and kept answers at flush, loose outcomes at once, and starts again empty', () => {
    const sunk: string[] = [];
    const a = outcome('a', 0);
    const b = outcome('b', 1, false, 'blue');
    const tally = new UsageTally([a, b], (name, enabled, variant, times) =>
      sunk.push(`${name} ${String(enabled)} ${variant} ×${times}`),
    );
    tally.count(a);
    tally.count(a);
    tally.count(outcome('loose', -1, true, 'red'));
    expect(sunk).toEqual(['loose true red ×1']);
    const answer = [a, b];
    tally.countAnswer(answer);
    tally.countAnswer(answer);
    tally.flush();
    expect(sunk).toEqual(['loose true red ×1', 'a true disabled ×4', 'b false blue ×2']);
    tally.flush();
    expect(sunk).toHaveLength(3);
  });

  test('keeps at most 1,024 distinct pending answers: more are handed over first', () => {
    let total = 0;
    const a = outcome('a', 0);
    const tally = new UsageTally([a], (_name, _enabled, _variant, times) => (total += times));
    for (let i = 0; i < 1025; i += 1) tally.countAnswer([a]);
    expect(total).toBe(1025);
  });
});
