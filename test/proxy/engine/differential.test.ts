/**
 * Differential test of the evaluation hot path: for random flag sets (every built-in strategy,
 * operator with `inverted`/`caseInsensitive` and edge values, segments, dependencies with variants
 * conditions, variants with overrides) and contexts (edge numbers, versions, Unicode with lone
 * surrogates, IPv4/IPv6), what the proxy answers over HTTP (with its engine, plans, memos and
 * response cache) equals plain SDK
 * evaluation (`isEnabled` + `getVariant` on a separate `Unleash` polling the same upstream) for
 * every toggle whose result does not depend on chance, and the usage counts it reports upstream
 * equal one count per evaluated toggle per request.
 */
import http from 'node:http';
import { hostname } from 'node:os';
import fc from 'fast-check';
import request from 'supertest';
import type { Context, Unleash } from 'unleash-client';
import { CLIENT_KEY, readyProxyFor } from '../../support/proxy';
import { listenOnLoopback } from '../../support/listen';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';
import { destroySdk, plainClient, type UsageCounts } from '../../support/sdk';

/** Scenarios per run: CI's 100 by default; `DIFF_RUNS=2000 npx jest test/proxy/engine/differential` for a deeper search. */
const RUNS = Number(process.env.DIFF_RUNS ?? 100);
// a scenario takes ~40 ms here: the time limit grows with the run count (at least a minute)
jest.setTimeout(Math.max(60_000, RUNS * 500));

const APP_NAME = 'differential-proxy';
const REMOTE = '127.0.0.1';

/* ---------- flag definitions ---------- */

interface Variant {
  name: string;
  weight: number;
  stickiness?: string;
  payload?: { type: string; value: string };
  overrides?: { contextName: string; values: string[] }[];
}
interface Strategy {
  name: string;
  parameters?: Record<string, string>;
  constraints?: Record<string, unknown>[];
  segments?: number[];
  variants?: Variant[];
}
interface Feature {
  name: string;
  enabled: boolean;
  impressionData: boolean;
  strategies: Strategy[];
  variants?: Variant[];
  dependencies?: { feature: string; enabled?: boolean; variants?: string[] }[];
}

const DATES = ['2000-01-01T00:00:00.000Z', '2025-06-01T00:00:00.000Z', '2090-01-01T00:00:00.000Z'];

/** Values at the edges: empty, padded, case and Unicode (lone surrogates too), huge. */
const EDGE_VALUES = ['', ' pro ', 'PRO', 'é', 'É', 'İ', 'ß', '\ud800', '😀', 'x'.repeat(300)];

/** A list with its values, sometimes with duplicates and edge values. */
const listOf = (values: string[]) =>
  fc
    .tuple(fc.subarray(values), fc.subarray(EDGE_VALUES, { maxLength: 2 }), fc.boolean())
    .map(([list, edges, twice]) => (twice ? [...list, ...edges, ...list] : [...list, ...edges]));

const constraintArb: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.record({
    contextName: fc.constantFrom('plan', 'region', 'userId', 'appName', 'environment', 'toString'),
    operator: fc.constantFrom('IN', 'NOT_IN'),
    values: listOf(['free', 'pro', 'eu', 'us', 'u1', 'u3', 'web', 'default']),
    inverted: fc.boolean(),
  }),
  fc.record({
    contextName: fc.constantFrom('email', 'plan'),
    operator: fc.constantFrom('STR_STARTS_WITH', 'STR_ENDS_WITH', 'STR_CONTAINS'),
    values: listOf(['ada', '@example.com', 'PRO', 'r', 'É']),
    caseInsensitive: fc.boolean(),
    inverted: fc.boolean(),
  }),
  fc.record({
    contextName: fc.constant('age'),
    operator: fc.constantFrom('NUM_EQ', 'NUM_GT', 'NUM_GTE', 'NUM_LT', 'NUM_LTE'),
    value: fc.constantFrom('18', '30', '65', '-0', '1e1', ' 30 ', 'abc', 'Infinity'),
    inverted: fc.boolean(),
  }),
  fc.record({
    contextName: fc.constant('version'),
    operator: fc.constantFrom('SEMVER_EQ', 'SEMVER_GT', 'SEMVER_GTE', 'SEMVER_LT', 'SEMVER_LTE'),
    value: fc.constantFrom('2.0.0', '2.3.1', '3.0.0-beta.1', '3.0.0-beta.2', '3.0.0', 'v2.0.0', 'bad'),
    inverted: fc.boolean(),
  }),
  fc.record({
    contextName: fc.constant('currentTime'),
    operator: fc.constantFrom('DATE_AFTER', 'DATE_BEFORE'),
    value: fc.constantFrom(...DATES),
    inverted: fc.boolean(),
  }),
  fc.record({
    contextName: fc.constantFrom('email', 'plan'),
    operator: fc.constant('REGEX'),
    value: fc.constantFrom('^a.*@', 'PRO', '[', 'é+'),
    caseInsensitive: fc.boolean(),
    inverted: fc.boolean(),
  }),
  fc.record({
    contextName: fc.constantFrom('remoteAddress', 'ip'),
    operator: fc.constant('IN_CIDR'),
    values: fc.constantFrom(
      ['127.0.0.0/8'],
      ['10.0.0.0/8'],
      ['2001:db8::/32', '::1'],
      [' 10.1.0.0/16 ', 'bad'],
    ),
    inverted: fc.boolean(),
  }),
);

/** `arbitrary` one time in four, else `otherwise`: keeps most toggles simple enough to be remembered. */
function sometimes<T, U>(arbitrary: fc.Arbitrary<T>, otherwise: U): fc.Arbitrary<T | U> {
  return fc.oneof({ arbitrary: fc.constant(otherwise), weight: 3 }, { arbitrary, weight: 1 });
}

const stickinessArb = fc.constantFrom('default', 'userId', 'sessionId', 'plan', 'random');

/** The host name the SDK's `applicationHostname` compares with. */
const HOST = (process.env.HOSTNAME || hostname() || 'undefined').toLowerCase();

const variantsArb: fc.Arbitrary<Variant[]> = fc
  .tuple(
    stickinessArb,
    fc.array(
      fc.record(
        {
          name: fc.constantFrom('blue', 'green', 'disabled', 'red'),
          weight: fc.constantFrom(0, 100, 500),
          payload: fc.constantFrom({ type: 'string', value: 'hello' }, { type: 'json', value: '{"a":1}' }),
          overrides: fc.constantFrom<Variant['overrides']>(
            [{ contextName: 'userId', values: ['u2'] }],
            [{ contextName: 'plan', values: ['pro', 'free'] }],
          ),
        },
        { requiredKeys: ['name', 'weight'] },
      ),
      { minLength: 1, maxLength: 3 },
    ),
  )
  .map(([stickiness, variants]) => variants.map((v) => ({ ...v, stickiness })));

const strategyArb: fc.Arbitrary<Strategy> = fc
  .tuple(
    fc.oneof(
      {
        arbitrary: fc.constantFrom({ name: 'default', parameters: {} }, { name: 'default' }),
        weight: 5,
      },
      fc.record({
        name: fc.constant('flexibleRollout'),
        parameters: fc.record({
          rollout: fc.constantFrom('0', '30', '100', '1', '99'),
          stickiness: stickinessArb,
          groupId: fc.constantFrom('g1', 'g2', ''),
        }),
      }),
      fc.record({ name: fc.constant('userWithId'), parameters: fc.constant({ userIds: 'u1, u3' }) }),
      fc.record({
        name: fc.constant('remoteAddress'),
        parameters: fc.constantFrom(
          { IPs: '127.0.0.1' },
          { IPs: '10.0.0.0/8' },
          { IPs: 'bad, 127.0.0.0/24' },
        ),
      }),
      fc.record({
        name: fc.constantFrom('gradualRolloutUserId', 'gradualRolloutSessionId', 'gradualRolloutRandom'),
        parameters: fc.record({
          percentage: fc.constantFrom('0', '50', '100', '1'),
          groupId: fc.constantFrom('g', ''),
        }),
      }),
      fc.record({
        name: fc.constant('applicationHostname'),
        parameters: fc.constantFrom(
          { hostNames: 'nowhere' },
          { hostNames: `nowhere, ${HOST.toUpperCase()}` },
        ),
      }),
      fc.constant({ name: 'noSuchStrategy' }),
    ),
    fc.array(constraintArb, { maxLength: 2 }),
    sometimes(fc.subarray([1, 2, 3]), []),
    sometimes(variantsArb, undefined),
  )
  .map(([base, constraints, segments, variants]) => ({
    ...base,
    ...(constraints.length ? { constraints } : {}),
    ...(segments.length ? { segments } : {}),
    // the SDK reads `parameters.groupId` for strategy variants: without parameters it throws, and
    // the proxy refuses such definitions
    ...(variants ? { parameters: {}, ...base, variants } : {}),
  }));

const featuresArb: fc.Arbitrary<Feature[]> = fc
  .array(
    fc.record({
      enabled: fc.boolean(),
      impressionData: fc.boolean(),
      strategies: fc.array(strategyArb, { maxLength: 3 }),
      variants: sometimes(variantsArb, undefined),
      parent: fc.option(fc.tuple(fc.nat(), fc.boolean(), fc.subarray(['blue', 'green', 'disabled'])), {
        nil: undefined,
        freq: 5,
      }),
    }),
    { minLength: 1, maxLength: 12 },
  )
  .map((raw) =>
    raw.map((f, i) => {
      const feature: Feature = {
        name: `f${String(i).padStart(2, '0')}`,
        enabled: f.enabled,
        impressionData: f.impressionData,
        strategies: f.strategies,
      };
      if (f.variants) feature.variants = f.variants;
      if (f.parent && i > 0)
        feature.dependencies = [
          {
            feature: `f${String(f.parent[0] % i).padStart(2, '0')}`,
            enabled: f.parent[1],
            // a variants condition when the parent must be enabled
            ...(f.parent[1] && f.parent[2].length ? { variants: f.parent[2] } : {}),
          },
        ];
      return feature;
    }),
  );

const SEGMENTS = [
  { id: 1, name: 's1', constraints: [{ contextName: 'region', operator: 'IN', values: ['eu'] }] },
  { id: 2, name: 's2', constraints: [{ contextName: 'userId', operator: 'IN', values: ['u1', 'u2'] }] },
  {
    id: 3,
    name: 's3',
    constraints: [{ contextName: 'currentTime', operator: 'DATE_AFTER', value: '2025-06-01T00:00:00.000Z' }],
  },
];

/* ---------- contexts and requests ---------- */

interface ClientContext {
  appName?: string;
  userId?: string;
  sessionId?: string;
  currentTime?: string;
  properties?: Record<string, string>;
}

const contextArb: fc.Arbitrary<ClientContext> = fc.record(
  {
    appName: fc.constantFrom('web', 'ios'),
    userId: fc.constantFrom('u1', 'u2', 'u3', 'u4'),
    sessionId: fc.constantFrom('s1', 's2'),
    currentTime: fc.constantFrom('2020-01-01T00:00:00.000Z', '2030-01-01T00:00:00.000Z'),
    properties: fc.record(
      {
        plan: fc.constantFrom('free', 'pro', 'enterprise', 'PRO', ' pro ', 'É', 'ß', '\ud800x', '😀'),
        region: fc.constantFrom('eu', 'us'),
        version: fc.constantFrom('1.0.0', '2.3.1', '3.0.0-beta.1', '3.0.0-beta.2', '3.0.0', 'v2.3.1', '2.3'),
        age: fc.constantFrom('17', '30', '65', '-0', '1e1', ' 30 ', '0x1e', 'Infinity', 'abc'),
        email: fc.constantFrom('ada@example.com', 'bob@corp.io', 'ADA@EXAMPLE.COM', 'ÉA@x'),
        ip: fc.constantFrom('10.1.2.3', '127.0.0.1', '2001:db8::1', '::1', '::ffff:10.1.2.3', 'bad'),
      },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: [] },
);

/** Three contexts; the second is the first with some properties changed, as happens between users. */
const contextsArb: fc.Arbitrary<ClientContext[]> = fc
  .tuple(contextArb, contextArb, contextArb)
  .map(([a, b, c]) => [a, { ...a, properties: { ...a.properties, ...b.properties } }, c]);

type Selection = { kind: 'enabled' } | { kind: 'all' } | { kind: 'named'; names: string[] };

interface Step {
  context: number;
  /**
   * 0: the context as drawn; n > 0: with user `n` instead (userId and sessionId): a new user whose
   * other fields were seen before, answered from the template of those fields once they were seen twice.
   */
  user: number;
  selection: Selection;
  revalidate: boolean;
}

const selectionArb: fc.Arbitrary<Selection> = fc.oneof(
  fc.constant({ kind: 'enabled' as const }),
  fc.constant({ kind: 'all' as const }),
  fc.record({
    kind: fc.constant('named' as const),
    names: fc.array(fc.constantFrom('f00', 'f01', 'f03', 'f05', 'f11', 'nope', 'constructor'), {
      maxLength: 6,
    }),
  }),
);

const stepsArb: fc.Arbitrary<Step[]> = fc.array(
  fc.record({
    context: fc.nat({ max: 2 }),
    user: fc.nat({ max: 6 }),
    selection: selectionArb,
    revalidate: fc.boolean(),
  }),
  { minLength: 10, maxLength: 40 },
);

/* ---------- the reference ---------- */

function resolveField(context: Context, field: string): string | undefined {
  const record = context as Record<string, unknown>;
  const value = record[field] ?? context.properties?.[field];
  return value === undefined || value === null || value === '' ? undefined : String(value);
}

/** True when the SDK may use chance for this toggle and context (conservative, independent of the proxy's code). */
function chancy(feature: Feature, context: Context, all: Map<string, Feature>): boolean {
  const seedMissing = (stickiness: string | undefined) =>
    !stickiness || stickiness === 'default'
      ? !context.userId && !context.sessionId && !context.remoteAddress
      : resolveField(context, stickiness) === undefined;
  for (const strategy of feature.strategies) {
    if (strategy.name === 'gradualRolloutRandom') return true;
    if (strategy.name === 'flexibleRollout') {
      const s = strategy.parameters?.stickiness;
      if (s === 'random' || (s === 'default' && !context.userId && !context.sessionId)) return true;
    }
    const sv = strategy.variants?.[0]?.stickiness ?? strategy.parameters?.stickiness;
    if (strategy.variants?.length && seedMissing(sv)) return true;
  }
  if (feature.variants?.length && seedMissing(feature.variants[0].stickiness)) return true;
  return (feature.dependencies ?? []).some((d) => {
    const parent = all.get(d.feature);
    return parent !== undefined && chancy(parent, context, all);
  });
}

interface ExpectedToggle {
  name: string;
  enabled: boolean;
  impressionData: boolean;
  variant: { name: string; enabled: boolean; payload?: { type: string; value: string } };
}

/**
 * Plain SDK evaluation of one toggle. A strategy that throws makes the proxy answer the toggle
 * disabled and, like the SDK, not count it: `counted` is false then.
 */
function plainEvaluate(
  plain: Unleash,
  features: Map<string, Feature>,
  name: string,
  context: Context,
): { toggle: ExpectedToggle; counted: boolean } {
  const impressionData = features.get(name)?.impressionData === true;
  let variant: ReturnType<Unleash['getVariant']>;
  let enabled: boolean;
  try {
    variant = plain.getVariant(name, context);
    enabled = plain.isEnabled(name, context);
  } catch {
    return {
      toggle: { name, enabled: false, impressionData, variant: { name: 'disabled', enabled: false } },
      counted: false,
    };
  }
  const chance = features.has(name) && chancy(features.get(name) as Feature, context, features);
  if (!chance) expect(Boolean(variant.feature_enabled)).toBe(enabled);
  const payload = variant.payload
    ? { payload: { type: variant.payload.type, value: variant.payload.value } }
    : {};
  return {
    toggle: {
      name,
      enabled,
      impressionData,
      variant: { name: variant.name, enabled: variant.enabled, ...payload },
    },
    counted: true,
  };
}

/** The query string of a context for GET /proxy. */
function toQuery(client: ClientContext): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(client)) {
    if (typeof value === 'string') params.append(name, value);
  }
  for (const [name, value] of Object.entries(client.properties ?? {}))
    params.append(`properties[${name}]`, value);
  return params.toString();
}

/** The context as a query string carries it: strings made well-formed UTF-16 (lone surrogates replaced). */
function wellFormed(client: ClientContext): ClientContext {
  const fix = (v: string) =>
    v.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
  const out: ClientContext = {};
  for (const [k, v] of Object.entries(client))
    if (typeof v === 'string') (out as Record<string, string>)[k] = fix(v);
  if (client.properties)
    out.properties = Object.fromEntries(Object.entries(client.properties).map(([k, v]) => [k, fix(v)]));
  return out;
}

/** The evaluation context the proxy builds for a POST body's context. */
function proxyContext(client: ClientContext): Context {
  return { ...client, environment: 'default', remoteAddress: REMOTE } as unknown as Context;
}

/* ---------- the property ---------- */

async function runScenario(features: Feature[], contexts: ClientContext[], steps: Step[]): Promise<void> {
  const payload: FeaturesPayload = { version: 2, features, segments: SEGMENTS };
  const upstream = await new TestUpstream(payload).start();
  const app = await readyProxyFor(upstream, { flagsAppName: APP_NAME, enableAllEndpoint: true });
  const { server, url } = await listenOnLoopback(app);
  const plain = await plainClient(upstream.url, upstream.token, APP_NAME);
  // every GET on one keep-alive connection, so a repeated query meets what the connection remembers
  const connection = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const byName = new Map(features.map((f) => [f.name, f]));
  const sortedNames = features.map((f) => f.name).sort();
  const expectedCounts = new Map<string, UsageCounts>();
  const chancyNames = new Set<string>();
  /** Toggles whose plain evaluation threw at least once (chance may decide whether the throwing strategy is reached). */
  const threwNames = new Set<string>();
  const evaluations = new Map<string, number>();
  const lastEtag = new Map<string, { etag: string; body: ExpectedToggle[] }>();
  try {
    for (const step of steps) {
      // GET /proxy (the front listener's raw GET path) for half of the enabled-only requests, POST (Express) otherwise
      const viaGet = step.selection.kind === 'enabled' && step.context !== 1;
      const drawn = contexts[step.context];
      const client: ClientContext =
        step.user === 0 ? drawn : { ...drawn, userId: `u${step.user}`, sessionId: `s${step.user}` };
      // a query string carries UTF-8: a lone surrogate arrives as U+FFFD
      const context = proxyContext(viaGet ? wellFormed(client) : client);
      const names = step.selection.kind === 'named' ? [...new Set(step.selection.names)] : sortedNames;
      const evaluated = names.map((n) => plainEvaluate(plain, byName, n, context));
      const expected = evaluated.map((e) => e.toggle);
      /** The usage the proxy counts for this request: one per evaluated toggle the definitions have. */
      const countEvaluations = () => {
        for (const { toggle: t, counted } of evaluated) {
          const f = byName.get(t.name);
          // names the definitions do not have are answered but never counted
          if (!f) continue;
          evaluations.set(t.name, (evaluations.get(t.name) ?? 0) + 1);
          if (chancy(f, context, byName)) chancyNames.add(t.name);
          if (!counted) {
            threwNames.add(t.name);
            continue;
          }
          const c = expectedCounts.get(t.name) ?? { yes: 0, no: 0, variants: {} };
          if (t.enabled) c.yes += 1;
          else c.no += 1;
          c.variants[t.variant.name] = (c.variants[t.variant.name] ?? 0) + 1;
          expectedCounts.set(t.name, c);
        }
      };
      const deterministic = (list: ExpectedToggle[]) =>
        list.filter((t) => {
          const f = byName.get(t.name);
          return !f || !chancy(f, context, byName);
        });
      const wanted = deterministic(
        step.selection.kind === 'enabled' ? expected.filter((t) => t.enabled) : expected,
      );
      const path = step.selection.kind === 'all' ? '/proxy/all' : '/proxy';
      const body =
        step.selection.kind === 'named'
          ? { context: client, toggles: step.selection.names }
          : { context: client };
      const key = `${path}|${JSON.stringify(body)}`;
      const previous = lastEtag.get(key);
      let req = viaGet
        ? request(url)
            .get(`/proxy?${toQuery(client)}`)
            .agent(connection)
            .set('Authorization', CLIENT_KEY)
        : request(url).post(path).set('Authorization', CLIENT_KEY).send(body);
      if (step.revalidate && previous) req = req.set('If-None-Match', previous.etag);
      const res = await req;
      const listed = step.selection.kind === 'enabled' ? expected.filter((t) => t.enabled) : expected;
      if (res.status === 304) {
        expect(previous).toBeDefined();
        expect(res.headers.etag).toBe(previous?.etag);
        if (String(res.headers.etag).startsWith('W/"d-')) {
          // a validator derived from the definitions and the context: given without evaluating,
          // so only when a fresh evaluation gives exactly the body the client holds, and not counted
          expect(previous?.body).toEqual(listed);
        } else {
          // a validator of the body: the proxy evaluated (and counted) and got the same bytes
          expect(deterministic(previous?.body ?? [])).toEqual(wanted);
          countEvaluations();
        }
        continue;
      }
      countEvaluations();
      expect(res.status).toBe(200);
      const got = res.body as { toggles: ExpectedToggle[] };
      // byte-identical to serialising the toggles: the proxy's JSON has no other shape
      expect(res.text).toBe(JSON.stringify(got));
      if (step.selection.kind !== 'enabled') expect(got.toggles.map((t) => t.name)).toEqual(names);
      expect(
        deterministic(got.toggles.filter((t) => byName.has(t.name) || step.selection.kind !== 'enabled')),
      ).toEqual(wanted);
      lastEtag.set(key, { etag: String(res.headers.etag), body: got.toggles });
    }
  } finally {
    connection.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await app.close();
    destroySdk(plain);
    await upstream.stop();
  }
  const sent = upstream
    .posted('/api/client/metrics')
    .map((r) => (r.body as { bucket: { toggles: Record<string, UsageCounts> } }).bucket.toggles);
  const actual = new Map<string, UsageCounts>();
  for (const bucket of sent) {
    for (const [name, c] of Object.entries(bucket)) {
      const a = actual.get(name) ?? { yes: 0, no: 0, variants: {} };
      a.yes += c.yes;
      a.no += c.no;
      for (const [v, n] of Object.entries(c.variants ?? {})) a.variants[v] = (a.variants[v] ?? 0) + n;
      actual.set(name, a);
    }
  }
  const certain = (names: Iterable<string>) => [...names].filter((n) => !chancyNames.has(n)).sort();
  expect(certain(actual.keys())).toEqual(certain(expectedCounts.keys()));
  for (const [name, got] of actual) {
    if (chancyNames.has(name)) {
      // chance decides yes/no and the variant (their shares: 'random rollouts' below), not how
      // many evaluations are counted: one per evaluation, unless a throwing strategy may be reached
      if (threwNames.has(name)) expect(got.yes + got.no).toBeLessThanOrEqual(evaluations.get(name) ?? 0);
      else expect({ name, counted: got.yes + got.no }).toEqual({ name, counted: evaluations.get(name) ?? 0 });
    } else {
      expect({ name, ...got }).toEqual({ name, ...expectedCounts.get(name) });
    }
  }
}

describe('optimised evaluation equals plain SDK evaluation', () => {
  test('for random flag sets, contexts, selections and revalidations, with equal usage counts', async () => {
    await fc.assert(
      fc.asyncProperty(featuresArb, contextsArb, stepsArb, (features, contexts, steps) =>
        runScenario(features, contexts, steps),
      ),
      { numRuns: RUNS },
    );
  });
});

/* ---------- chance, checked statistically ---------- */

/** Requests of the statistical test: each evaluates every random toggle once. */
const CHANCE_REQUESTS = 3000;

/** Random rollouts and a random variant split, each with the share the definitions give it. */
const CHANCE_FEATURES: Feature[] = [
  {
    name: 'random-30',
    enabled: true,
    impressionData: false,
    strategies: [{ name: 'gradualRolloutRandom', parameters: { percentage: '30', groupId: 'g' } }],
  },
  {
    name: 'random-1',
    enabled: true,
    impressionData: false,
    strategies: [{ name: 'gradualRolloutRandom', parameters: { percentage: '1', groupId: 'g' } }],
  },
  {
    name: 'flexible-random-70',
    enabled: true,
    impressionData: false,
    strategies: [
      { name: 'flexibleRollout', parameters: { rollout: '70', stickiness: 'random', groupId: 'g' } },
    ],
  },
  {
    name: 'random-50-for-pro',
    enabled: true,
    impressionData: false,
    strategies: [
      {
        name: 'gradualRolloutRandom',
        parameters: { percentage: '50', groupId: 'g' },
        constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }],
      },
    ],
  },
  {
    name: 'random-split',
    enabled: true,
    impressionData: false,
    strategies: [{ name: 'default' }],
    variants: [
      { name: 'a', weight: 300, stickiness: 'random' },
      { name: 'b', weight: 700, stickiness: 'random' },
    ],
  },
];

/** The share each random toggle is enabled for (of the requests it applies to), by its definition. */
const CHANCE_SHARES: Record<string, number> = {
  'random-30': 0.3,
  'random-1': 0.01,
  'flexible-random-70': 0.7,
  'random-50-for-pro': 0.5,
};

/**
 * p̂ lies within p ± 5σ (σ = √(p(1−p)/n)): a binomial share falls outside that about once in
 * 1.7 million runs, so the check does not flake, yet a share off by 5 points or more (n = 3000, p = 0.3: 5σ ≈ 4.2 points) fails it.
 */
function expectShare(what: string, hits: number, n: number, p: number): void {
  const sigma = Math.sqrt((p * (1 - p)) / n);
  const share = hits / n;
  const within = Math.abs(share - p) <= 5 * sigma;
  expect({ what, share, p, n, within }).toEqual({ what, share, p, n, within: true });
}

describe('random rollouts', () => {
  test('enable a share within binomial bounds of their percentage over thousands of users, and report one usage count per evaluation', async () => {
    const upstream = await new TestUpstream({ version: 2, features: CHANCE_FEATURES, segments: [] }).start();
    const app = await readyProxyFor(upstream, { flagsAppName: APP_NAME, enableAllEndpoint: true });
    const { server, url } = await listenOnLoopback(app);
    const connection = new http.Agent({ keepAlive: true, maxSockets: 8 });
    const enabled = new Map<string, number>();
    let variantA = 0;
    let pro = 0;
    const seen = (name: string) => enabled.set(name, (enabled.get(name) ?? 0) + 1);
    try {
      for (let start = 0; start < CHANCE_REQUESTS; start += 50) {
        const batch = Array.from({ length: Math.min(50, CHANCE_REQUESTS - start) }, (_, j) => start + j);
        const answers = await Promise.all(
          batch.map(async (i) => {
            const plan = i % 2 === 0 ? 'pro' : 'free';
            // half through the front listener's raw GET path (enabled toggles), half POST /proxy/all
            const res =
              i % 4 < 2
                ? await request(url)
                    .get(`/proxy?userId=user-${i}&plan=${plan}`)
                    .agent(connection)
                    .set('Authorization', CLIENT_KEY)
                : await request(url)
                    .post('/proxy/all')
                    .set('Authorization', CLIENT_KEY)
                    .send({ context: { userId: `user-${i}`, properties: { plan } } });
            expect(res.status).toBe(200);
            return { plan, toggles: (res.body as { toggles: ExpectedToggle[] }).toggles };
          }),
        );
        for (const { plan, toggles } of answers) {
          if (plan === 'pro') pro += 1;
          for (const t of toggles) {
            if (!t.enabled) continue;
            seen(t.name);
            if (t.name === 'random-50-for-pro') expect(plan).toBe('pro');
            if (t.name === 'random-split' && t.variant.name === 'a') variantA += 1;
          }
        }
      }
    } finally {
      connection.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await app.close();
      await upstream.stop();
    }
    const n = CHANCE_REQUESTS;
    for (const [name, p] of Object.entries(CHANCE_SHARES))
      expectShare(name, enabled.get(name) ?? 0, name === 'random-50-for-pro' ? pro : n, p);
    expect(enabled.get('random-split')).toBe(n);
    expectShare('variant a of random-split', variantA, n, 0.3);

    // what the proxy reported upstream: every evaluation counted once, and the yes it answered
    const reported = new Map<string, UsageCounts>();
    for (const r of upstream.posted('/api/client/metrics')) {
      const toggles = (r.body as { bucket: { toggles: Record<string, UsageCounts> } }).bucket.toggles;
      for (const [name, c] of Object.entries(toggles)) {
        const a = reported.get(name) ?? { yes: 0, no: 0, variants: {} };
        a.yes += c.yes;
        a.no += c.no;
        for (const [v, k] of Object.entries(c.variants ?? {})) a.variants[v] = (a.variants[v] ?? 0) + k;
        reported.set(name, a);
      }
    }
    for (const f of CHANCE_FEATURES) {
      const got = reported.get(f.name);
      const yes = enabled.get(f.name) ?? 0;
      expect({ name: f.name, yes: got?.yes, evaluations: (got?.yes ?? 0) + (got?.no ?? 0) }).toEqual({
        name: f.name,
        yes,
        evaluations: n,
      });
    }
    expect(reported.get('random-split')?.variants).toEqual({ a: variantA, b: n - variantA });
  });
});
