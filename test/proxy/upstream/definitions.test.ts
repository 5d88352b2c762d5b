import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import { sampleFeatures } from '../../support/fixtures';
import { capturingLogger } from '../../support/logger';
import { CLIENT_KEY, proxyFor, readyProxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';
import { LoopbackServers } from '../../support/listen';
import { referenceSdk } from '../../support/reference-sdk';
import type { ClientFeaturesResponse } from 'unleash-client';

const upstreams: TestUpstream[] = [];
const apps: ProxyApp[] = [];
const servers = new LoopbackServers();

async function upstreamWith(payload: FeaturesPayload = sampleFeatures()): Promise<TestUpstream> {
  const upstream = await new TestUpstream(payload).start();
  upstreams.push(upstream);
  return upstream;
}

const track = (app: ProxyApp) => {
  apps.push(app);
  return app;
};

afterEach(async () => {
  await servers.closeAll();
  await Promise.all(apps.splice(0).map((a) => a.close()));
  await Promise.all(upstreams.splice(0).map((u) => u.stop()));
});

type Json = Record<string, unknown>;

/** The sample definitions with one more toggle, given as raw JSON (it may be malformed on purpose). */
function sampleWith(...extra: Json[]): FeaturesPayload {
  const payload = sampleFeatures();
  payload.features.push(...extra);
  return payload;
}

type Listed = { name: string; enabled: boolean; variant: unknown };

/**
 * A ready proxy listing every toggle over `payload`, its `/proxy/all` for userId u1 over a real
 * socket (a toggle by name), and the error lines it logged until then.
 */
async function listedFor(payload: FeaturesPayload) {
  const logger = capturingLogger();
  const app = track(await readyProxyFor(await upstreamWith(payload), { logger, enableAllEndpoint: true }));
  const url = await servers.listen(app);
  const res = await fetch(`${url}/proxy/all?userId=u1`, { headers: { authorization: CLIENT_KEY } });
  expect(res.status).toBe(200);
  const toggles = ((await res.json()) as { toggles: Listed[] }).toggles;
  const errors = logger.lines.filter((l) => l.level === 'error');
  return { app, errors, listed: (name: string) => toggles.find((t) => t.name === name) };
}

const DEPENDENCIES_AS_OBJECT: Json = {
  name: 'child',
  enabled: true,
  strategies: [{ name: 'default', parameters: {} }],
  dependencies: { feature: 'always-on' },
};

const OVERRIDE_WITH_NULL: Json = {
  name: 'overridden',
  enabled: true,
  strategies: [{ name: 'default', parameters: {} }],
  variants: [{ name: 'a', weight: 1000, stickiness: 'default', overrides: [null] }],
};

const names = (body: { toggles: { name: string }[] }) => body.toggles.map((t) => t.name);

/** GET and POST /proxy over a real socket. */
async function proxyAnswers(app: ProxyApp) {
  const url = await servers.listen(app);
  const get = await fetch(`${url}/proxy?userId=u1`, { headers: { authorization: CLIENT_KEY } });
  const post = await fetch(`${url}/proxy`, {
    method: 'POST',
    headers: { authorization: CLIENT_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ context: { userId: 'u1' } }),
  });
  return {
    get: { status: get.status, body: await get.text() },
    post: { status: post.status, body: await post.text() },
  };
}

/** A toggle the SDK evaluates to false (client specification files 14 and 15): never refused. */
const SEMVER_NOT_A_VERSION: Json = {
  name: 'semver-v-prefix',
  enabled: true,
  strategies: [
    { name: 'default', constraints: [{ contextName: 'version', operator: 'SEMVER_GT', value: 'v1.2.3' }] },
  ],
};
const MISSING_SEGMENT: Json = {
  name: 'missing-segment',
  enabled: true,
  strategies: [{ name: 'default', segments: [404] }],
};
/** A list operator without a list: the SDK throws evaluating it. */
const IN_WITHOUT_LIST: Json = {
  name: 'in-without-list',
  enabled: true,
  strategies: [{ name: 'default', constraints: [{ contextName: 'userId', operator: 'IN', values: 'u1' }] }],
};

async function ofrepBulk(app: ProxyApp) {
  const url = await servers.listen(app);
  const res = await fetch(`${url}/ofrep/v1/evaluate/flags`, {
    method: 'POST',
    headers: { authorization: CLIENT_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ context: { targetingKey: 'u1' } }),
  });
  return (await res.json()) as {
    flags: { key: string; errorCode?: string; value?: unknown; reason?: string }[];
  };
}

describe('definitions the SDK evaluates are data', () => {
  test.each([
    ['a SEMVER constraint whose value is not a version', SEMVER_NOT_A_VERSION, 'semver-v-prefix'],
    ['a strategy naming a segment the answer lacks', MISSING_SEGMENT, 'missing-segment'],
    ['dependencies given as an object', DEPENDENCIES_AS_OBJECT, 'child'],
  ])(
    'a first answer with %s makes the proxy ready and evaluates it as the SDK does',
    async (_what, toggle, name) => {
      const upstream = await upstreamWith(sampleWith(toggle));
      const logger = capturingLogger();
      const app = track(await readyProxyFor(upstream, { logger, enableAllEndpoint: true }));
      const url = await servers.listen(app);
      const all = await fetch(`${url}/proxy/all?userId=u1&version=2.0.0`, {
        headers: { authorization: CLIENT_KEY },
      });
      expect(all.status).toBe(200);
      const toggles = ((await all.json()) as { toggles: { name: string; enabled: boolean }[] }).toggles;
      // exactly the SDK's answer: semver reads "v1.2.3" as 1.2.3, a missing segment fails the
      // strategy, dependencies that are not a list are none
      const sdk = referenceSdk(sampleWith(toggle), { appName: 'flags-proxy', environment: 'default' });
      const expected = sdk(name, {
        userId: 'u1',
        properties: { version: '2.0.0' },
        remoteAddress: '127.0.0.1',
      });
      expect(expected).toMatchObject({ enabled: name !== 'missing-segment' });
      expect(toggles.find((t) => t.name === name)?.enabled).toBe(name !== 'missing-segment');
      expect(toggles.find((t) => t.name === 'always-on')?.enabled).toBe(true);
      expect(logger.lines.filter((l) => l.level === 'error')).toEqual([]);
      expect(app.features.stats.definitionsRefused).toBe(0);
    },
  );

  test('constraints given as false, 0 or null are none, as the SDK reads them: evaluated, compiled, no error line', async () => {
    // found by the differential fuzz test: compiling `constraints: false` threw "not iterable"
    const falsy: Json[] = [
      {
        name: 'rollout-false-lists',
        enabled: true,
        strategies: [
          {
            name: 'flexibleRollout',
            parameters: { rollout: '100', stickiness: 'default', groupId: 'g' },
            constraints: false,
            segments: null,
            variants: null,
          },
        ],
        variants: null,
      },
      {
        name: 'random-false-constraints',
        enabled: true,
        strategies: [{ name: 'gradualRolloutRandom', parameters: { percentage: '100' }, constraints: 0 }],
      },
      {
        name: 'default-null-lists',
        enabled: true,
        strategies: [{ name: 'default', parameters: {}, constraints: null }],
      },
    ];
    const payload = sampleFeatures();
    payload.features.push(...falsy);
    const upstream = await upstreamWith(payload);
    const logger = capturingLogger();
    const app = track(await readyProxyFor(upstream, { logger, enableAllEndpoint: true }));
    const url = await servers.listen(app);
    const res = await fetch(`${url}/proxy/all?userId=u1`, { headers: { authorization: CLIENT_KEY } });
    expect(res.status).toBe(200);
    const toggles = ((await res.json()) as { toggles: { name: string; enabled: boolean }[] }).toggles;
    const sdk = referenceSdk(payload, { appName: 'flags-proxy', environment: 'default' });
    for (const { name } of falsy as { name: string }[]) {
      const expected = sdk(name as string, { userId: 'u1', remoteAddress: '127.0.0.1' });
      expect(expected).toMatchObject({ enabled: true });
      expect(toggles.find((t) => t.name === name)?.enabled).toBe(true);
    }
    expect(logger.lines.filter((l) => l.level === 'error')).toEqual([]);
    expect(app.features.stats.togglesQuarantined).toBe(0);
  });

  test.each([0, false, ''])(
    'segments given as %p make the SDK throw: that toggle alone is quarantined, naming the field',
    async (segments) => {
      const toggle: Json = {
        name: 'odd-segments',
        enabled: true,
        strategies: [{ name: 'default', parameters: {}, segments }],
      };
      const sdk = referenceSdk(sampleWith(toggle), { appName: 'flags-proxy', environment: 'default' });
      expect(sdk('odd-segments', { userId: 'u1' })).toBe('threw');
      const { app, errors, listed } = await listedFor(sampleWith(toggle));
      expect(listed('odd-segments')).toMatchObject({ enabled: false });
      expect(listed('always-on')).toMatchObject({ enabled: true });
      expect(app.features.stats.togglesQuarantined).toBe(1);
      expect(errors).toHaveLength(1);
      expect(errors[0].msg).toMatch(/^quarantined: .*"odd-segments".*strategies\[0\]\.segments/);
    },
  );

  /** A value the SDK cannot make a string: an object whose own `toString` is no function, in a list. */
  const UNCONVERTIBLE = [{ toString: 'not a function', other: true }, ['a', false]];

  test.each([
    ['a stickiness that is no field name', 'variants[0].stickiness', { stickiness: UNCONVERTIBLE }],
    ['a weight that cannot be added', 'variants', { weight: { toString: 'x' } }],
  ])(
    "the toggle's own variants with %s make every enabled evaluation throw: quarantined, naming the field, answered as the SDK answers",
    async (_label, field, variant) => {
      const toggle: Json = {
        name: 'odd-variants',
        enabled: true,
        strategies: [{ name: 'default', parameters: {} }],
        variants: [{ name: 'a', weight: 1000, ...variant }],
      };
      const sdk = referenceSdk(sampleWith(toggle), { appName: 'flags-proxy', environment: 'default' });
      expect(sdk('odd-variants', { userId: 'u1' })).toBe('threw');
      const { app, errors, listed } = await listedFor(sampleWith(toggle));
      expect(listed('odd-variants')).toMatchObject({
        enabled: false,
        variant: { name: 'disabled', enabled: false },
      });
      expect(listed('always-on')).toMatchObject({ enabled: true });
      expect(app.features.stats.togglesQuarantined).toBe(1);
      expect(errors).toHaveLength(1);
      expect(errors[0].msg).toContain(`quarantined: toggle "odd-variants" at ${field}:`);
    },
  );

  test.each([
    [
      'an override answers first for some users',
      {
        variants: [
          { name: 'a', weight: 1000, stickiness: UNCONVERTIBLE },
          { name: 'b', weight: 0, overrides: [{ contextName: 'userId', values: ['u1'] }] },
        ],
      },
    ],
    ['the weights add up to nothing', { variants: [{ name: 'a', weight: 0, stickiness: UNCONVERTIBLE }] }],
    [
      "a strategy's variants answer first",
      {
        strategies: [
          { name: 'default', parameters: {}, variants: [{ name: 's', weight: 1000, stickiness: 'default' }] },
        ],
        variants: [{ name: 'a', weight: 1000, stickiness: UNCONVERTIBLE }],
      },
    ],
  ])(
    'an unreadable stickiness that not every enabled evaluation reaches (%s) is not quarantined: answered as the SDK answers',
    async (_label, shape) => {
      const toggle: Json = {
        name: 'odd-variants',
        enabled: true,
        strategies: [{ name: 'default', parameters: {} }],
        ...shape,
      };
      const sdk = referenceSdk(sampleWith(toggle), { appName: 'flags-proxy', environment: 'default' });
      const expected = sdk('odd-variants', { userId: 'u1', remoteAddress: '127.0.0.1' });
      expect(expected).toMatchObject({ enabled: true });
      const { app, errors, listed } = await listedFor(sampleWith(toggle));
      const got = listed('odd-variants');
      expect(got && { enabled: got.enabled, variant: got.variant }).toEqual(expected);
      expect(app.features.stats.togglesQuarantined).toBe(0);
      expect(errors).toEqual([]);
    },
  );

  test('a first strategy whose name cannot be made a string makes every enabled evaluation throw: quarantined; a later one is evaluated as the SDK evaluates it', async () => {
    const toggles: Json[] = [
      { name: 'odd-first', enabled: true, strategies: [{ name: UNCONVERTIBLE, parameters: {} }] },
      {
        name: 'odd-second',
        enabled: true,
        strategies: [
          { name: 'default', parameters: {} },
          { name: UNCONVERTIBLE, parameters: {} },
        ],
      },
    ];
    const payload = sampleWith(...toggles);
    const sdk = referenceSdk(payload, { appName: 'flags-proxy', environment: 'default' });
    expect(sdk('odd-first', { userId: 'u1' })).toBe('threw');
    expect(sdk('odd-second', { userId: 'u1' })).toMatchObject({ enabled: true });
    const { app, errors, listed } = await listedFor(payload);
    expect(listed('odd-first')).toMatchObject({ enabled: false });
    expect(listed('odd-second')).toMatchObject({ enabled: true });
    expect(app.features.stats.togglesQuarantined).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0].msg).toContain('quarantined: toggle "odd-first" at strategies[0].name:');
  });

  test('a disabled toggle with such a first strategy never throws: not quarantined, and a child asking for it disabled is evaluated as the SDK evaluates it', async () => {
    const toggles: Json[] = [
      { name: 'odd-off', enabled: false, strategies: [{ name: UNCONVERTIBLE, parameters: {} }] },
      {
        name: 'odd-off-child',
        enabled: true,
        strategies: [{ name: 'default', parameters: {} }],
        dependencies: [{ feature: 'odd-off', enabled: false }],
      },
    ];
    const payload = sampleWith(...toggles);
    const sdk = referenceSdk(payload, { appName: 'flags-proxy', environment: 'default' });
    expect(sdk('odd-off', { userId: 'u1' })).toMatchObject({ enabled: false });
    expect(sdk('odd-off-child', { userId: 'u1' })).toMatchObject({ enabled: true });
    const { app, errors, listed } = await listedFor(payload);
    expect(listed('odd-off')).toMatchObject({ enabled: false });
    expect(listed('odd-off-child')).toMatchObject({ enabled: true });
    expect(app.features.stats.togglesQuarantined).toBe(0);
    expect(errors).toEqual([]);
  });

  test('a segment whose constraints are false makes the SDK throw: the toggles using it are quarantined', async () => {
    const payload = sampleWith({
      name: 'false-segment',
      enabled: true,
      strategies: [{ name: 'default', parameters: {}, segments: [77] }],
    });
    payload.segments = [...(payload.segments ?? []), { id: 77, constraints: false }];
    const sdk = referenceSdk(payload, { appName: 'flags-proxy', environment: 'default' });
    expect(sdk('false-segment', { userId: 'u1' })).toBe('threw');
    const { app, errors, listed } = await listedFor(payload);
    expect(listed('false-segment')).toMatchObject({ enabled: false });
    expect(app.features.stats.togglesQuarantined).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0].msg).toMatch(/^quarantined: .*"false-segment".*segment 77\)\.constraints/);
  });

  test("toggles the SDK's validation reports (enabled not a boolean, variants not a list) are served as the SDK evaluates them, with a warning and no fetch error", async () => {
    const reported: Json[] = [
      { name: 'enabled-as-text', enabled: 'yes', strategies: [{ name: 'default', parameters: {} }] },
      {
        name: 'variants-as-object',
        enabled: true,
        strategies: [{ name: 'default', parameters: {} }],
        variants: { name: 'a', weight: 1000 },
      },
    ];
    const payload = sampleFeatures();
    payload.features.push(...reported);
    const upstream = await upstreamWith(payload);
    const logger = capturingLogger();
    const app = track(
      await readyProxyFor(upstream, { logger, refreshInterval: 50, enableAllEndpoint: true }),
    );
    const url = await servers.listen(app);
    // several polls of the same answer
    const polls = upstream.featureRequests().length;
    await waitFor(() => upstream.featureRequests().length >= polls + 3, 8000);
    const all = await fetch(`${url}/proxy/all?userId=u1`, { headers: { authorization: CLIENT_KEY } });
    expect(all.status).toBe(200);
    type Listed = { name: string; enabled: boolean; variant: { name: string; enabled: boolean } };
    const listed = ((await all.json()) as { toggles: Listed[] }).toggles;
    const sdk = referenceSdk(payload, { appName: 'flags-proxy', environment: 'default' });
    for (const { name } of reported) {
      const expected = sdk(name as string, { userId: 'u1', remoteAddress: '127.0.0.1' });
      if (expected === 'threw') throw new Error(`the SDK throws on ${String(name)}`);
      expect(listed.find((t) => t.name === name)).toMatchObject({
        enabled: expected.enabled,
        variant: { name: expected.variant.name, enabled: expected.variant.enabled },
      });
    }
    expect(app.features.stats.fetchErrors).toBe(0);
    const metrics = await fetch(`${url}/proxy/internal-backstage/prometheus`, {
      headers: { authorization: CLIENT_KEY },
    });
    expect(await metrics.text()).toMatch(/^flags_proxy_upstream_fetch_errors_total 0$/m);
    const warnings = logger.lines.filter((l) => l.level === 'warn').map((l) => l.msg);
    expect(warnings.some((m) => m.includes('feature.enabled should be'))).toBe(true);
    expect(logger.lines.filter((l) => l.level === 'error')).toEqual([]);
  });

  test('a toggle that would make evaluation throw is quarantined alone: disabled, OFREP GENERAL, logged once naming the field, counted', async () => {
    const upstream = await upstreamWith(sampleWith(OVERRIDE_WITH_NULL));
    const logger = capturingLogger();
    const app = track(
      await readyProxyFor(upstream, { logger, refreshInterval: 50, enableAllEndpoint: true }),
    );
    const url = await servers.listen(app);
    const answer = await proxyAnswers(app);
    expect(answer.get.status).toBe(200);
    expect(names(JSON.parse(answer.get.body) as { toggles: { name: string }[] })).toContain('always-on');
    const all = await fetch(`${url}/proxy/all`, { headers: { authorization: CLIENT_KEY } });
    const listed = ((await all.json()) as { toggles: { name: string; enabled: boolean }[] }).toggles;
    expect(listed.find((t) => t.name === 'overridden')).toMatchObject({ enabled: false });
    const flags = (await ofrepBulk(app)).flags;
    expect(flags.find((f) => f.key === 'overridden')).toMatchObject({ errorCode: 'GENERAL' });
    expect(flags.find((f) => f.key === 'always-on')).toMatchObject({ value: true });

    // more polls of the same revision log nothing more
    const polls = upstream.featureRequests().length;
    await waitFor(() => upstream.featureRequests().length >= polls + 3, 8000);
    const errors = logger.lines.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0].msg).toContain('"overridden"');
    expect(errors[0].msg).toContain('variants[0].overrides[0]');
    expect(JSON.stringify(logger.lines)).not.toContain(upstream.token);
    const metrics = await fetch(`${url}/proxy/internal-backstage/prometheus`, {
      headers: { authorization: CLIENT_KEY },
    });
    expect(await metrics.text()).toMatch(/^flags_proxy_toggles_quarantined 1$/m);

    // later changes keep arriving, and a fixed toggle leaves the quarantine
    const fixed = sampleFeatures();
    (fixed.features[1] as Json).enabled = true; // switched-off goes on
    upstream.setFeatures(fixed);
    await waitFor(async () => (await proxyAnswers(app)).get.body.includes('"switched-off"'));
    expect(app.features.stats.togglesQuarantined).toBe(0);
  });

  test('an update with a toggle that would throw keeps every other change of the same answer', async () => {
    const upstream = await upstreamWith();
    const app = track(await readyProxyFor(upstream, { refreshInterval: 50 }));
    const changed = sampleWith(IN_WITHOUT_LIST);
    (changed.features[1] as Json).enabled = true; // a valid change in the same answer
    upstream.setFeatures(changed);
    await waitFor(async () => (await proxyAnswers(app)).get.body.includes('"switched-off"'));
    expect(app.features.fault('in-without-list')?.path).toBe('strategies[0].constraints[0].values');
    const health = await request(app).get('/proxy/health');
    expect(health.status).toBe(200);
  });

  test('an answer that is not a definitions document is refused as a whole and the last good one stays', async () => {
    const upstream = await upstreamWith();
    const logger = capturingLogger();
    const app = track(await readyProxyFor(upstream, { refreshInterval: 50, logger }));
    const before = await proxyAnswers(app);
    upstream.fault = { status: 200, body: JSON.stringify({ version: 2, features: { 'always-on': {} } }) };
    await waitFor(() => app.features.stats.fetchErrors + refusedCount(app) > 0);
    expect(await proxyAnswers(app)).toEqual(before);
  });
});

const refusedCount = (app: ProxyApp) => app.features.stats.definitionsRefused;

describe('streaming and delta answers', () => {
  test('an upstream asking for streaming (fetch-mode header) is polled for full answers all the same', async () => {
    const upstream = await upstreamWith();
    upstream.featureHeaders = { 'fetch-mode': 'streaming' };
    const app = track(await readyProxyFor(upstream, { refreshInterval: 50 }));
    expect((await proxyAnswers(app)).get.body).toContain('"always-on"');

    const changed = sampleFeatures();
    (changed.features[1] as Json).enabled = true; // switched-off goes on
    upstream.setFeatures(changed);
    await waitFor(async () => (await proxyAnswers(app)).get.body.includes('"switched-off"'));
    expect(
      upstream.requests.filter((r) => r.path !== '/api/client/features').map((r) => r.path),
    ).not.toContain('/api/client/streaming');
  });

  test('a delta answer is applied with the same checks: updates arrive, removals go, a toggle that would throw is quarantined', async () => {
    const upstream = await upstreamWith();
    const app = track(await readyProxyFor(upstream, { refreshInterval: 50 }));
    upstream.fault = {
      status: 200,
      body: JSON.stringify({
        events: [
          { type: 'feature-updated', eventId: 2, feature: OVERRIDE_WITH_NULL },
          {
            type: 'feature-updated',
            eventId: 3,
            feature: { name: '__proto__', enabled: true, strategies: [{ name: 'default' }] },
          },
          { type: 'feature-removed', eventId: 4, featureName: 'always-on', project: 'default' },
        ],
      }),
    };
    await waitFor(async () => !(await proxyAnswers(app)).get.body.includes('"always-on"'));
    const body = JSON.parse((await proxyAnswers(app)).get.body) as { toggles: { name: string }[] };
    expect(names(body)).toContain('__proto__');
    expect(names(body)).not.toContain('overridden');
    expect(app.features.fault('overridden')).toBeDefined();
  });
});

describe('definitions from other sources', () => {
  test('a stored backup goes through the same checks: the proxy is ready and quarantines the toggle that would throw', async () => {
    const upstream = await upstreamWith();
    upstream.fault = { status: 503 };
    const stored = sampleWith(OVERRIDE_WITH_NULL);
    const gets: string[] = [];
    const storageProvider = {
      set: () => Promise.resolve(),
      get: (key: string) => {
        gets.push(key);
        return Promise.resolve(stored as ClientFeaturesResponse);
      },
    };
    const app = track(proxyFor(upstream, { storageProvider }));
    await app.whenReady();
    expect(gets.length).toBeGreaterThan(0);
    expect(app.features.fault('overridden')?.path).toBe('variants[0].overrides[0]');
    expect(
      names(JSON.parse((await proxyAnswers(app)).get.body) as { toggles: { name: string }[] }),
    ).toContain('always-on');
  });

  test('a stored backup that is not a definitions document does not make the proxy ready', async () => {
    const upstream = await upstreamWith();
    upstream.fault = { status: 503 };
    const storageProvider = {
      set: () => Promise.resolve(),
      get: () => Promise.resolve({ version: 2, features: 'none' } as unknown as ClientFeaturesResponse),
    };
    const logger = capturingLogger();
    const app = track(proxyFor(upstream, { storageProvider, logger }));
    await waitFor(() => refusedCount(app) > 0);
    expect(logger.lines.find((l) => l.level === 'error')?.msg).toMatch(/stored backup: features: not a list/);
    expect((await request(app).get('/proxy/health')).status).toBe(503);
    upstream.fault = undefined;
    await app.whenReady();
  });
});
