/**
 * Differential test of project views (keys limited to some projects of an environment): for random
 * dependency graphs across projects, what the proxy answers a project-limited key on every
 * evaluation path (GET /proxy through the front listener's raw GET path, POST /proxy/all, POST /api/frontend, OFREP bulk
 * and single) equals plain SDK evaluation over the WHOLE environment (a parent in another project
 * counts, as the SDK evaluates it), limited to the view's toggles; users are asked in a different
 * order on each path; an ETag given to one user is never a 304 for another unless the answers are
 * equal; and the usage the proxy reports upstream is one count per evaluated toggle.
 */
import http from 'node:http';
import fc from 'fast-check';
import request from 'supertest';
import type { Context, Unleash } from 'unleash-client';
import { readyProxyFor } from '../../support/proxy';
import { listenOnLoopback } from '../../support/listen';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';
import { destroySdk, plainClient, type UsageCounts } from '../../support/sdk';

/** Scenarios per run: a tenth of the differential test's `DIFF_RUNS` (100 by default, so 10), at least 5. */
const RUNS = Math.max(5, Math.round(Number(process.env.DIFF_RUNS ?? 100) / 10));
// a scenario takes ~3 s on a loaded 2-core machine: the time limit grows with the run count
jest.setTimeout(Math.max(60_000, RUNS * 10_000));

const APP_NAME = 'differential-views';
const UPSTREAM_TOKEN = '*:default.upstream-views-secret';
/** A pretrusted key limited to p1, and a multi-project token the upstream confirms for p1 and p3. */
const KEY_P1 = 'p1:default.view-p1-secret';
const KEY_MULTI = '[]:default.view-multi-secret';
const VIEWS: ReadonlyArray<{ key: string; projects: readonly string[] }> = [
  { key: KEY_P1, projects: ['p1'] },
  { key: KEY_MULTI, projects: ['p1', 'p3'] },
];
const PROJECTS = ['p1', 'p2', 'p3'];
const USERS = 6;

/* ---------- definitions: toggles spread over projects, depending on each other ---------- */

interface Variant {
  name: string;
  weight: number;
  stickiness: string;
  payload?: { type: string; value: string };
}
interface Strategy {
  name: string;
  parameters: Record<string, string>;
  constraints?: Record<string, unknown>[];
  segments?: number[];
}
interface Dependency {
  feature: string;
  enabled?: boolean;
  variants?: string[];
}
interface Feature {
  name: string;
  project: string;
  enabled: boolean;
  impressionData: boolean;
  strategies: Strategy[];
  variants?: Variant[];
  dependencies?: Dependency[];
}

const VARIANT_NAMES = ['blue', 'green', 'red'];

// No chance: every context has a userId and a sessionId, stickiness is never random; dates are
// far from now, so the clock decides the same way all along (it is read: no currentTime is sent).
const constraintArb: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.record({
    contextName: fc.constant('userId'),
    operator: fc.constantFrom('IN', 'NOT_IN'),
    values: fc.subarray(['u0', 'u1', 'u2', 'u3', 'u4', 'u5']),
  }),
  fc.record({
    contextName: fc.constantFrom('plan', 'region'),
    operator: fc.constantFrom('IN', 'NOT_IN'),
    values: fc.subarray(['free', 'pro', 'eu', 'us']),
    inverted: fc.boolean(),
  }),
  fc.record({
    contextName: fc.constant('currentTime'),
    operator: fc.constantFrom('DATE_AFTER', 'DATE_BEFORE'),
    value: fc.constantFrom('2000-01-01T00:00:00.000Z', '2090-01-01T00:00:00.000Z'),
  }),
);

const strategyArb: fc.Arbitrary<Strategy> = fc
  .tuple(
    fc.oneof(
      { arbitrary: fc.constant({ name: 'default', parameters: {} }), weight: 3 },
      fc.record({
        name: fc.constant('userWithId'),
        parameters: fc.constantFrom({ userIds: 'u1,u3' }, { userIds: 'u0, u2, u5' }),
      }),
      fc.record({
        name: fc.constant('flexibleRollout'),
        parameters: fc.record({
          rollout: fc.constantFrom('0', '50', '100'),
          stickiness: fc.constantFrom('default', 'userId', 'sessionId'),
          groupId: fc.constantFrom('g1', 'g2'),
        }),
      }),
    ),
    fc.array(constraintArb, { maxLength: 2 }),
    fc.oneof(
      { arbitrary: fc.constant<number[]>([]), weight: 3 },
      { arbitrary: fc.subarray([1, 2]), weight: 1 },
    ),
  )
  .map(([base, constraints, segments]) => ({
    ...base,
    ...(constraints.length ? { constraints } : {}),
    ...(segments.length ? { segments } : {}),
  }));

const variantsArb: fc.Arbitrary<Variant[]> = fc
  .tuple(fc.constantFrom('default', 'userId'), fc.subarray(VARIANT_NAMES, { minLength: 1 }), fc.boolean())
  .map(([stickiness, names, payload]) =>
    names.map((name) => ({
      name,
      weight: 100,
      stickiness,
      ...(payload ? { payload: { type: 'string', value: `${name}-payload` } } : {}),
    })),
  );

/**
 * A parent: mostly one of the first half of the toggles (which seldom depend on others), else any
 * toggle (the toggle itself, one with parents of its own), or none by that name.
 */
const dependencyArb = (count: number): fc.Arbitrary<Dependency> =>
  fc
    .record({
      parent: fc.oneof(
        { arbitrary: fc.nat({ max: Math.ceil(count / 2) - 1 }).map(nameOf), weight: 6 },
        { arbitrary: fc.nat({ max: count - 1 }).map(nameOf), weight: 2 },
        { arbitrary: fc.constant('missing-parent'), weight: 1 },
      ),
      enabled: fc.constantFrom(true, false, undefined),
      variants: fc.option(fc.subarray(['blue', 'green', 'disabled'], { minLength: 1 }), {
        nil: undefined,
        freq: 4,
      }),
    })
    .map(({ parent, enabled, variants }) => ({
      feature: parent,
      ...(enabled === undefined ? {} : { enabled }),
      ...(variants ? { variants } : {}),
    }));

const nameOf = (i: number): string => `t${String(i).padStart(2, '0')}`;

/** Strategies of a parent: often reading the user (its children then depend on who asks). */
const parentStrategiesArb = fc.oneof(
  fc.array(strategyArb, { maxLength: 2 }),
  fc.constantFrom<Strategy[]>(
    [{ name: 'userWithId', parameters: { userIds: 'u1,u3' } }],
    [
      {
        name: 'default',
        parameters: {},
        constraints: [{ contextName: 'userId', operator: 'IN', values: ['u0', 'u2', 'u4'] }],
      },
    ],
    [{ name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'userId', groupId: 'g' } }],
    [{ name: 'default', parameters: {}, segments: [2] }],
  ),
);

/**
 * The first half of the toggles are parents (one in six depends on others itself), the second
 * half children (five in six depend on one or two parents); children's own strategies seldom read
 * the user, so what a child answers is often decided by a parent, in any project.
 */
const randomFeaturesArb: fc.Arbitrary<Feature[]> = fc.integer({ min: 3, max: 10 }).chain((count) =>
  fc.tuple(
    ...Array.from({ length: count }, (_, i) => {
      const parent = i < Math.ceil(count / 2);
      return fc
        .record({
          project: fc.constantFrom(...PROJECTS, 'p1', 'p2'),
          enabled: fc.oneof(
            { arbitrary: fc.constant(true), weight: 4 },
            { arbitrary: fc.constant(false), weight: 1 },
          ),
          impressionData: fc.boolean(),
          strategies: parent
            ? parentStrategiesArb
            : fc.oneof(
                { arbitrary: fc.constant<Strategy[]>([]), weight: 2 },
                { arbitrary: fc.array(strategyArb, { maxLength: 2 }), weight: 1 },
              ),
          variants: fc.option(variantsArb, { nil: undefined, freq: 3 }),
          dependencies: parent
            ? fc.oneof(
                { arbitrary: fc.constant<Dependency[]>([]), weight: 5 },
                { arbitrary: fc.array(dependencyArb(count), { minLength: 1, maxLength: 1 }), weight: 1 },
              )
            : fc.oneof(
                { arbitrary: fc.constant<Dependency[]>([]), weight: 1 },
                { arbitrary: fc.array(dependencyArb(count), { minLength: 1, maxLength: 1 }), weight: 3 },
                { arbitrary: fc.array(dependencyArb(count), { minLength: 2, maxLength: 2 }), weight: 2 },
              ),
        })
        .map((f): Feature => ({
          name: nameOf(i),
          project: f.project,
          enabled: f.enabled,
          impressionData: f.impressionData,
          strategies: f.strategies,
          ...(f.variants ? { variants: f.variants } : {}),
          ...(f.dependencies.length ? { dependencies: f.dependencies } : {}),
        }));
    }),
  ),
);

/**
 * A pair every scenario holds besides: a child in p1 that reads no user itself, depending on a
 * parent in p2 (outside every view) that does, so who asks decides the child's answer.
 */
const crossPairArb: fc.Arbitrary<Feature[]> = fc
  .record({
    strategies: fc.constantFrom<Strategy[]>(
      [{ name: 'userWithId', parameters: { userIds: 'u1,u3' } }],
      [
        {
          name: 'default',
          parameters: {},
          constraints: [{ contextName: 'userId', operator: 'IN', values: ['u0', 'u2', 'u4'] }],
        },
      ],
      [{ name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'userId', groupId: 'g' } }],
      [{ name: 'default', parameters: {}, segments: [2] }],
    ),
    variants: fc.option(variantsArb, { nil: undefined, freq: 2 }),
    childStrategies: fc.constantFrom<Strategy[]>(
      [],
      [{ name: 'default', parameters: {} }],
      [
        {
          name: 'default',
          parameters: {},
          constraints: [{ contextName: 'plan', operator: 'IN', values: ['free', 'pro'] }],
        },
      ],
    ),
    dependency: fc.record({
      enabled: fc.constantFrom(true, false, undefined),
      variants: fc.option(fc.subarray(VARIANT_NAMES, { minLength: 1 }), { nil: undefined, freq: 3 }),
    }),
  })
  .map(({ strategies, variants, childStrategies, dependency }) => [
    {
      name: 'x-parent',
      project: 'p2',
      enabled: true,
      impressionData: false,
      strategies,
      ...(variants ? { variants } : {}),
    },
    {
      name: 'x-child',
      project: 'p1',
      enabled: true,
      impressionData: false,
      strategies: childStrategies,
      dependencies: [
        {
          feature: 'x-parent',
          ...(dependency.enabled === undefined ? {} : { enabled: dependency.enabled }),
          ...(dependency.variants && variants ? { variants: dependency.variants } : {}),
        },
      ],
    },
  ]);

const featuresArb: fc.Arbitrary<Feature[]> = fc
  .tuple(randomFeaturesArb, crossPairArb)
  .map(([random, pair]) => [...random, ...pair]);

const SEGMENTS = [
  { id: 1, name: 's1', constraints: [{ contextName: 'region', operator: 'IN', values: ['eu'] }] },
  { id: 2, name: 's2', constraints: [{ contextName: 'userId', operator: 'IN', values: ['u1', 'u2', 'u5'] }] },
];

/* ---------- users and the order each path asks them in ---------- */

interface User {
  userId: string;
  sessionId: string;
  properties: Record<string, string>;
}

const usersArb: fc.Arbitrary<User[]> = fc.tuple(
  ...Array.from({ length: USERS }, (_, i) =>
    fc
      .record({ plan: fc.constantFrom('free', 'pro'), region: fc.constantFrom('eu', 'us') })
      .map((properties) => ({ userId: `u${i}`, sessionId: `s${i}`, properties })),
  ),
);

const orderArb = fc.shuffledSubarray(
  Array.from({ length: USERS }, (_, i) => i),
  { minLength: USERS, maxLength: USERS },
);

const PATHS = ['get', 'all', 'frontend', 'bulk', 'single'] as const;

/** Per key, per path, two orders (the first pass and the revalidating pass), and which ETag each revalidation sends. */
const ordersArb = fc.tuple(
  ...VIEWS.map(() =>
    fc.tuple(
      ...PATHS.map(() =>
        fc.tuple(
          orderArb,
          orderArb,
          fc.array(fc.nat({ max: USERS - 1 }), { minLength: USERS, maxLength: USERS }),
        ),
      ),
    ),
  ),
);

/* ---------- the reference: plain SDK evaluation over the whole environment ---------- */

interface ExpectedToggle {
  name: string;
  enabled: boolean;
  impressionData: boolean;
  variant: { name: string; enabled: boolean; payload?: { type: string; value: string } };
}

/** The context the proxy builds for these users (the socket is loopback; the environment is the default). */
function contextOf(user: User): Context {
  return { ...user, environment: 'default', remoteAddress: '127.0.0.1' };
}

function plainEvaluate(plain: Unleash, feature: Feature, context: Context): ExpectedToggle {
  const variant = plain.getVariant(feature.name, context);
  const enabled = plain.isEnabled(feature.name, context);
  expect(Boolean(variant.feature_enabled)).toBe(enabled);
  return {
    name: feature.name,
    enabled,
    impressionData: feature.impressionData,
    variant: {
      name: variant.name,
      enabled: variant.enabled,
      ...(variant.payload ? { payload: { type: variant.payload.type, value: variant.payload.value } } : {}),
    },
  };
}

function toQuery(user: User): string {
  const params = new URLSearchParams({ userId: user.userId, sessionId: user.sessionId });
  for (const [name, value] of Object.entries(user.properties)) params.append(`properties[${name}]`, value);
  return params.toString();
}

/** What OFREP must say of a toggle whose SDK answer is `expected`. */
function checkOfrep(result: Record<string, unknown>, feature: Feature, expected: ExpectedToggle): void {
  const where = { key: feature.name, expected };
  expect({ ...where, variant: result.variant }).toEqual({ ...where, variant: expected.variant.name });
  if (!feature.enabled) {
    expect({ ...where, reason: result.reason }).toEqual({ ...where, reason: 'DISABLED' });
    return;
  }
  expect({ ...where, off: result.reason === 'DEFAULT' }).toEqual({ ...where, off: !expected.enabled });
  if (typeof result.value === 'boolean')
    expect({ ...where, value: result.value }).toEqual({ ...where, value: expected.enabled });
  else if (typeof result.value === 'string')
    expect({ ...where, value: result.value }).toEqual({ ...where, value: expected.variant.payload?.value });
}

type Orders = [number[], number[], number[]][][];

async function runScenario(features: Feature[], users: User[], orders: Orders): Promise<void> {
  const payload: FeaturesPayload = { version: 2, features, segments: SEGMENTS };
  const upstream = await new TestUpstream(payload, UPSTREAM_TOKEN).start();
  upstream.knownTokens.set(KEY_MULTI, { type: 'frontend', environment: 'default', projects: ['p1', 'p3'] });
  const app = await readyProxyFor(upstream, {
    flagsApiToken: UPSTREAM_TOKEN,
    clientKeys: [KEY_P1],
    flagsAppName: APP_NAME,
    enableAllEndpoint: true,
  });
  const { server, url } = await listenOnLoopback(app);
  const plain = await plainClient(upstream.url, UPSTREAM_TOKEN, APP_NAME);
  const expectedCounts = new Map<string, UsageCounts>();
  const count = (toggles: readonly ExpectedToggle[]) => {
    for (const t of toggles) {
      const c = expectedCounts.get(t.name) ?? { yes: 0, no: 0, variants: {} };
      if (t.enabled) c.yes += 1;
      else c.no += 1;
      c.variants[t.variant.name] = (c.variants[t.variant.name] ?? 0) + 1;
      expectedCounts.set(t.name, c);
    }
  };
  try {
    for (const [v, { key, projects }] of VIEWS.entries()) {
      const visible = features
        .filter((f) => projects.includes(f.project))
        .sort((a, b) => (a.name < b.name ? -1 : 1));
      const expected = users.map((u) => visible.map((f) => plainEvaluate(plain, f, contextOf(u))));
      for (const [p, path] of PATHS.entries()) {
        const [first, second, etagOf] = orders[v][p];
        // the raw GET path's connection memo: every GET of a key on one keep-alive connection
        const connection = new http.Agent({ keepAlive: true, maxSockets: 1 });
        const given: { etag: string; body: unknown }[] = [];
        const ask = async (u: number, ifNoneMatch: string | undefined) => {
          const user = users[u];
          let req: request.Test;
          if (path === 'get')
            req = request(url)
              .get(`/proxy?${toQuery(user)}`)
              .agent(connection)
              .set('Authorization', key);
          else if (path === 'all')
            req = request(url).post('/proxy/all').set('Authorization', key).send({ context: user });
          else if (path === 'frontend')
            req = request(url).post('/api/frontend').set('Authorization', key).send({ context: user });
          else
            req = request(url)
              .post('/ofrep/v1/evaluate/flags')
              .set('Authorization', key)
              .send({
                context: { targetingKey: user.userId, sessionId: user.sessionId, ...user.properties },
              });
          if (ifNoneMatch !== undefined) req = req.set('If-None-Match', ifNoneMatch);
          return req;
        };
        /** The answer of the path for user `u`, as the SDK's answers give it. */
        const wanted = (u: number): unknown =>
          path === 'bulk' ? undefined : path === 'all' ? expected[u] : expected[u].filter((t) => t.enabled);
        const check = (u: number, status: number, body: unknown) => {
          expect(status).toBe(200);
          if (path === 'bulk') {
            const flags = (body as { flags: Record<string, unknown>[] }).flags;
            expect(flags.map((f) => f.key)).toEqual(visible.map((f) => f.name));
            flags.forEach((flag, i) => checkOfrep(flag, visible[i], expected[u][i]));
          } else {
            expect({ user: u, toggles: (body as { toggles: unknown }).toggles }).toEqual({
              user: u,
              toggles: wanted(u),
            });
          }
        };
        if (path === 'single') {
          for (const u of first) {
            for (const [i, feature] of visible.entries()) {
              const user = users[u];
              const res = await request(url)
                .post(`/ofrep/v1/evaluate/flags/${feature.name}`)
                .set('Authorization', key)
                .send({
                  context: { targetingKey: user.userId, sessionId: user.sessionId, ...user.properties },
                });
              expect(res.status).toBe(200);
              checkOfrep(res.body as Record<string, unknown>, feature, expected[u][i]);
              count([expected[u][i]]);
            }
          }
          connection.destroy();
          continue;
        }
        const etags = new Map<number, string>();
        for (const u of first) {
          const res = await ask(u, undefined);
          check(u, res.status, res.body);
          count(expected[u]);
          etags.set(u, String(res.headers.etag));
          given.push({ etag: String(res.headers.etag), body: res.body });
        }
        // again, in another order, each with the ETag some user (itself or another) was given
        for (const [n, u] of second.entries()) {
          const sent = etags.get(etagOf[n]) as string;
          const res = await ask(u, sent);
          if (res.status === 304) {
            expect(res.headers.etag).toBe(sent);
            const held = given.find((g) => g.etag === sent)?.body;
            // a 304 means the client's copy is this user's answer
            check(u, 200, held);
            if (!sent.startsWith('W/"d-')) count(expected[u]);
            continue;
          }
          check(u, res.status, res.body);
          count(expected[u]);
          // the same user and definitions: the same derived validator
          if (sent.startsWith('W/"d-') && etagOf[n] === u) expect(res.headers.etag).toBe(sent);
        }
        connection.destroy();
      }
    }
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await app.close();
    destroySdk(plain);
    await upstream.stop();
  }
  const actual = new Map<string, UsageCounts>();
  for (const r of upstream.posted('/api/client/metrics')) {
    const bucket = (r.body as { bucket: { toggles: Record<string, UsageCounts> } }).bucket.toggles;
    for (const [name, c] of Object.entries(bucket)) {
      const a = actual.get(name) ?? { yes: 0, no: 0, variants: {} };
      a.yes += c.yes;
      a.no += c.no;
      for (const [variant, n] of Object.entries(c.variants ?? {}))
        a.variants[variant] = (a.variants[variant] ?? 0) + n;
      actual.set(name, a);
    }
  }
  expect([...actual.keys()].sort()).toEqual([...expectedCounts.keys()].sort());
  for (const [name, got] of actual) expect({ name, ...got }).toEqual({ name, ...expectedCounts.get(name) });
}

describe('a project view evaluates as the SDK does over the whole environment', () => {
  test('random dependency graphs across projects, users in different orders, on every path, with equal usage counts', async () => {
    await fc.assert(
      fc.asyncProperty(featuresArb, usersArb, ordersArb, (features, users, orders) =>
        runScenario(features, users, orders),
      ),
      { numRuns: RUNS },
    );
  });
});
