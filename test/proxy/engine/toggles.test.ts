/**
 * One property per built-in strategy, and for dependencies and variants: a toggle compiled by the
 * engine answers what `unleash-client`'s own client answers (`getVariant`: enabled, variant name,
 * variant enabled, payload) for random definitions (parameters at their edges, constraints,
 * segments, strategy and feature variants with weights, overrides and stickiness) and random
 * contexts. Chance is pinned (`Math.random` answers one drawn number for both) so random
 * strategies and seeds are compared too. The answer loop's flat layout of a toggle
 * (`compiled/flat.ts`) answers what the compiled toggle answers whenever it answers at all.
 */
import { hostname } from 'node:os';
import fc from 'fast-check';
import type { Context } from 'unleash-client';
import { Checks } from '../../../src/proxy/engine/compiled/checks';
import { RequestScope } from '../../../src/proxy/engine/compiled/scope';
import { compileFeature, type CompileSources } from '../../../src/proxy/engine/compiled/toggle';
import { answerSlot, DISABLED_SLOT, ENABLED_SLOT } from '../../../src/proxy/engine/compiled/variants';
import { FlatToggles } from '../../../src/proxy/engine/compiled/flat';
import type { CompiledToggle } from '../../../src/proxy/engine/compiled-toggle';
import type { SdkVariant } from '../../../src/proxy/upstream/feature-repository';
import type { FeatureInterface, Segment } from '../../../src/proxy/upstream/sdk/types';
import { referenceSdk } from '../../support/reference-sdk';
import { anyString, contextArb, edgeValue } from './edge-values';

/** Cases per property: 100 by default (each checks 41 contexts); `DIFF_RUNS=5000` for a deeper search. */
const RUNS = Number(process.env.DIFF_RUNS ?? 100);
jest.setTimeout(Math.max(30_000, RUNS * 200));

const SEGMENTS: Segment[] = [
  { id: 1, constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }] },
  { id: 2, constraints: [{ contextName: 'userId', operator: 'IN', values: ['u1', 'u2'] }] },
  { id: 3, constraints: [] },
] as unknown as Segment[];

const HOST = (process.env.HOSTNAME || hostname() || 'undefined').toLowerCase();

const ids = fc.oneof(fc.constantFrom('u1', 'u2', 'u3', 's1', 's2', ''), edgeValue);
const addresses = fc.constantFrom(
  '127.0.0.1',
  '10.1.2.3',
  '192.168.0.1',
  '::1',
  '2001:db8::1',
  'garbage',
  '',
);

/** Contexts whose ids and addresses are often the ones definitions name. */
const contexts: fc.Arbitrary<Context> = fc
  .tuple(
    contextArb,
    fc.option(ids, { nil: undefined }),
    fc.option(ids, { nil: undefined }),
    fc.option(addresses, { nil: undefined }),
    fc.option(fc.constantFrom('pro', 'free', 'u1'), { nil: undefined }),
  )
  .map(([context, userId, sessionId, remoteAddress, plan]) => {
    const c: Context = { ...context };
    if (userId !== undefined) c.userId = userId;
    if (sessionId !== undefined) c.sessionId = sessionId;
    if (remoteAddress !== undefined) c.remoteAddress = remoteAddress;
    if (plan !== undefined) c.properties = { ...c.properties, plan };
    return c;
  });

const percentage = fc.constantFrom<unknown>('0', '1', '30', '50', '99', '100', '', 'abc', 33, '1e1');
const groupId = fc.constantFrom<unknown>('g1', 'g2', '', undefined, 'Σ😀\ud800');
const stickiness = fc.constantFrom<unknown>(
  'default',
  'userId',
  'sessionId',
  'random',
  'plan',
  '',
  undefined,
  'constructor',
);

const PARAMETERS: Record<string, fc.Arbitrary<Record<string, unknown> | undefined>> = {
  default: fc.constantFrom<Record<string, unknown> | undefined>({}, undefined),
  flexibleRollout: fc.record({ rollout: percentage, stickiness, groupId }, { requiredKeys: [] }),
  gradualRolloutUserId: fc.record({ percentage, groupId }, { requiredKeys: [] }),
  gradualRolloutSessionId: fc.record({ percentage, groupId }, { requiredKeys: [] }),
  gradualRolloutRandom: fc.record({ percentage }, { requiredKeys: [] }),
  userWithId: fc.record(
    { userIds: fc.oneof(fc.constantFrom('u1, u3', 'u1,u2 ,  u3', '', 'u1', ' u2 '), anyString) },
    { requiredKeys: [] },
  ),
  remoteAddress: fc.record(
    {
      IPs: fc.constantFrom(
        '127.0.0.1',
        '10.0.0.0/8, 192.168.0.1',
        '::1',
        'garbage, 10.1.2.3',
        '',
        '10.1.2.3/33',
      ),
    },
    { requiredKeys: [] },
  ),
  applicationHostname: fc.record(
    { hostNames: fc.constantFrom('nowhere', HOST, `NOWHERE, ${HOST.toUpperCase()}`, '', ` ${HOST} `) },
    { requiredKeys: [] },
  ),
};

const constraintArb = fc.oneof(
  fc.record({
    contextName: fc.constantFrom('plan', 'userId', 'region'),
    operator: fc.constantFrom('IN', 'NOT_IN'),
    values: fc.subarray(['pro', 'free', 'u1', 'eu']),
    inverted: fc.boolean(),
  }),
  fc.record({
    contextName: fc.constantFrom('email', 'plan'),
    operator: fc.constantFrom('STR_STARTS_WITH', 'STR_CONTAINS'),
    values: fc.subarray(['a', 'PRO']),
    caseInsensitive: fc.boolean(),
  }),
  fc.record({
    contextName: fc.constant('age'),
    operator: fc.constant('NUM_GT'),
    value: fc.constantFrom('1', '30'),
  }),
);

const payloadArb = fc.option(
  fc.constantFrom(
    { type: 'string', value: 'hello' },
    { type: 'json', value: '{"a":1}' },
    { type: 'number', value: '1' },
  ),
  { nil: undefined },
);

const variantsArb = fc
  .tuple(
    fc.constantFrom<unknown>('default', 'userId', 'sessionId', 'plan', 'random', undefined, ''),
    fc.array(
      fc.record(
        {
          name: fc.constantFrom('blue', 'green', 'disabled', 'red'),
          weight: fc.constantFrom(0, 1, 33, 100, 500, 1000),
          payload: payloadArb,
          overrides: fc.array(
            fc.record({
              contextName: fc.constantFrom('userId', 'plan', 'remoteAddress'),
              values: fc.subarray(['u1', 'pro', '127.0.0.1', 's1']),
            }),
            { maxLength: 2 },
          ),
        },
        { requiredKeys: ['name', 'weight'] },
      ),
      { minLength: 1, maxLength: 4 },
    ),
  )
  .map(([sticky, variants]) =>
    variants.map((v) => (sticky === undefined ? v : { ...v, stickiness: sticky })),
  );

function strategyArb(name: string): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .tuple(
      PARAMETERS[name],
      fc.array(constraintArb, { maxLength: 2 }),
      fc.subarray([1, 2, 3, 4]),
      fc.option(variantsArb, { nil: undefined, freq: 2 }),
    )
    .map(([parameters, constraints, segments, variants]) => {
      const strategy: Record<string, unknown> = { name };
      if (parameters !== undefined || variants) strategy.parameters = parameters ?? {};
      if (constraints.length) strategy.constraints = constraints;
      if (segments.length) strategy.segments = segments;
      if (variants) strategy.variants = variants;
      return strategy;
    });
}

function featureArb(strategies: fc.Arbitrary<Record<string, unknown>[]>): fc.Arbitrary<FeatureInterface> {
  return fc
    .record({
      enabled: fc.oneof({ arbitrary: fc.constant(true), weight: 4 }, fc.constant(false)),
      strategies,
      variants: fc.option(variantsArb, { nil: undefined, freq: 2 }),
    })
    .map(
      ({ enabled, strategies, variants }) =>
        ({
          name: 'toggle',
          enabled,
          strategies,
          ...(variants ? { variants } : {}),
        }) as unknown as FeatureInterface,
    );
}

function sourcesOf(features: readonly FeatureInterface[]): CompileSources {
  const byName = new Map(features.map((f) => [f.name, f]));
  const segments = new Map(SEGMENTS.map((s) => [s.id, s]));
  return {
    isBuiltInStrategy: () => true,
    segment: (id) => segments.get(id),
    feature: (name) => byName.get(name),
  };
}

const SWEEP = Array.from({ length: 40 }, (_, k) => `id${k}`);

/** The context with `id` as its user, session and sticky property (each kept missing when it was). */
function withIds(context: Context, id: string): Context {
  const c: Context = { ...context, properties: { ...context.properties, plan: id } };
  if (context.userId !== undefined) c.userId = id;
  if (context.sessionId !== undefined) c.sessionId = id;
  return c;
}

/** Answers of the flat layout (`compiled/flat.ts`) compared with the compiled toggle's, over all cases. */
let flatAnswers = 0;

/**
 * The flat layout of compiled toggles, with each answer's outcome id standing for its slot (the
 * fallback answers' slots, and each variant answer's own), as `outcomes.ts` would have interned them.
 */
function flatOf(compiled: ReturnType<typeof compileFeature>[]): FlatToggles {
  const toggles = compiled.map((engine, index) => {
    const bySlot = Array.from({ length: 64 }, (_, slot) => ({ id: slot }));
    return {
      index,
      engine,
      constant: undefined,
      group: -1,
      offId: DISABLED_SLOT,
      onId: ENABLED_SLOT,
      bySlot,
    };
  });
  return new FlatToggles(toggles as unknown as CompiledToggle[]);
}

/** What both answer for every toggle of `features` and `context`, with `Math.random` answering `chance`. */
function compare(features: FeatureInterface[], context: Context, chance: number): void {
  const random = jest.spyOn(Math, 'random').mockReturnValue(chance);
  try {
    const reference = referenceSdk({ features, segments: SEGMENTS }, {});
    const checks = new Checks();
    const sources = sourcesOf(features);
    const compiled = features.map((f) => compileFeature(f, sources, checks));
    const flat = flatOf(compiled);
    const scope = new RequestScope(checks.size);
    // an answer's slot names it within its toggle: one slot, one answer object (what `outcomeOf` relies on)
    const bySlot = features.map(() => new Map<number, SdkVariant>());
    // the context as drawn, then with a sweep of ids: rollout and weight boundaries are met
    for (const c of [context, ...SWEEP.map((id) => withIds(context, id))]) {
      scope.begin(c);
      features.forEach((feature, i) => {
        const answer = compiled[i].evaluate(scope);
        const slot = answerSlot(answer);
        expect(slot).toBeGreaterThanOrEqual(0);
        if (flat.has(i)) {
          const flatSlot = flat.outcome(i, scope);
          if (flatSlot >= 0) {
            flatAnswers += 1;
            expect({ name: feature.name, slot: flatSlot }).toEqual({ name: feature.name, slot });
          }
        }
        const known = bySlot[i].get(slot);
        if (known === undefined) bySlot[i].set(slot, answer);
        else expect(answer).toBe(known);
        const payload = answer.payload ? { payload: answer.payload } : {};
        expect({
          name: feature.name,
          enabled: Boolean(answer.feature_enabled),
          variant: { name: answer.name, enabled: answer.enabled, ...payload },
        }).toEqual({ name: feature.name, ...(reference(feature.name, c) as object) });
      });
    }
  } finally {
    random.mockRestore();
  }
}

const chanceArb = fc.oneof(
  fc.constantFrom(0, 0.004999, 0.5, 0.99999),
  fc.double({ min: 0, max: 0.9999999, noNaN: true }),
);

describe('toggles compiled by the engine answer as the SDK does', () => {
  test.each(Object.keys(PARAMETERS))('with the %s strategy', (name) => {
    fc.assert(
      fc.property(
        featureArb(fc.array(strategyArb(name), { minLength: 1, maxLength: 2 })),
        contexts,
        chanceArb,
        (feature, context, chance) => compare([feature], context, chance),
      ),
      { numRuns: RUNS },
    );
  });

  test('with several strategies, feature variants and overrides', () => {
    const any = fc.constantFrom(...Object.keys(PARAMETERS)).chain(strategyArb);
    fc.assert(
      fc.property(
        featureArb(fc.array(any, { maxLength: 4 })),
        contexts,
        chanceArb,
        (feature, context, chance) => compare([feature], context, chance),
      ),
      { numRuns: RUNS },
    );
  });

  test('with dependencies on parents, their variants and disabled parents', () => {
    const any = fc.constantFrom(...Object.keys(PARAMETERS)).chain(strategyArb);
    const setArb = fc
      .array(
        fc.tuple(
          featureArb(fc.array(any, { maxLength: 2 })),
          fc.array(
            fc.record(
              {
                parent: fc.nat(),
                enabled: fc.constantFrom<boolean | undefined>(true, false, undefined),
                variants: fc.subarray(['blue', 'green', 'disabled']),
              },
              { requiredKeys: ['parent'] },
            ),
            { maxLength: 2 },
          ),
        ),
        { minLength: 1, maxLength: 5 },
      )
      .map((raw) =>
        raw.map(([feature, dependencies], i) => {
          const named = { ...feature, name: `f${i}` } as FeatureInterface;
          if (i > 0 && dependencies.length)
            named.dependencies = dependencies.map((d) => ({
              feature: `f${d.parent % i}`,
              ...(d.enabled === undefined ? {} : { enabled: d.enabled }),
              ...(d.variants ? { variants: d.variants } : {}),
            }));
          return named;
        }),
      );
    fc.assert(
      fc.property(setArb, contexts, chanceArb, (features, context, chance) =>
        compare(features, context, chance),
      ),
      { numRuns: RUNS },
    );
  });

  test('laid out flat: rollouts on a groupId at every percentage, with a variant choice without overrides', () => {
    const plain = (sticky: unknown) =>
      fc
        .array(
          fc.record(
            {
              name: fc.constantFrom('blue', 'green', 'red'),
              weight: fc.nat({ max: 1000 }),
              payload: payloadArb,
            },
            { requiredKeys: ['name', 'weight'] },
          ),
          { minLength: 1, maxLength: 4 },
        )
        .map((variants) => variants.map((v) => (sticky === undefined ? v : { ...v, stickiness: sticky })));
    const variantSticky = fc.constantFrom<unknown>('default', 'userId', 'sessionId', 'plan', undefined);
    const rollout = fc
      .record({
        rollout: fc.oneof(fc.integer({ min: 0, max: 100 }).map(String), percentage),
        stickiness: fc.constantFrom<unknown>('default', 'userId', 'sessionId', 'plan', undefined),
        groupId: fc.constantFrom('g1', 'g2', 'Σ😀\ud800', 'a:b'),
        constraints: fc.array(constraintArb, { maxLength: 1 }),
        where: fc.constantFrom('strategy', 'toggle', 'none'),
        variants: variantSticky.chain(plain),
      })
      .map(({ rollout: pct, stickiness: sticky, groupId: group, constraints, where, variants }) => {
        const strategy: Record<string, unknown> = {
          name: 'flexibleRollout',
          parameters: { rollout: pct, stickiness: sticky, groupId: group },
          constraints,
        };
        if (where === 'strategy') strategy.variants = variants;
        return {
          name: 'toggle',
          enabled: true,
          strategies: [strategy],
          ...(where === 'toggle' ? { variants } : {}),
        } as unknown as FeatureInterface;
      });
    const before = flatAnswers;
    fc.assert(
      fc.property(rollout, contexts, chanceArb, (feature, context, chance) =>
        compare([feature], context, chance),
      ),
      { numRuns: RUNS },
    );
    expect(flatAnswers - before).toBeGreaterThan(10 * RUNS);
  });

  test('the flat layout answered in the properties above (rollouts, checks, default, variants)', () => {
    // runs after them (jest keeps a file's order): their cases laid many toggles out flat
    expect(flatAnswers).toBeGreaterThan(RUNS);
  });

  test('a custom strategy, an unknown strategy or a missing parent is left to the SDK', () => {
    const sources = sourcesOf([]);
    const custom = { ...sources, isBuiltInStrategy: (n: string) => n !== 'default' };
    const feature = (f: Record<string, unknown>) =>
      ({ name: 't', enabled: true, strategies: [], ...f }) as unknown as FeatureInterface;
    expect(() =>
      compileFeature(feature({ strategies: [{ name: 'default' }] }), custom, new Checks()),
    ).toThrow('strategy default');
    expect(() =>
      compileFeature(feature({ strategies: [{ name: 'mine', parameters: {} }] }), sources, new Checks()),
    ).toThrow('strategy mine');
    expect(() =>
      compileFeature(feature({ dependencies: [{ feature: 'gone' }] }), sources, new Checks()),
    ).toThrow('missing parent gone');
  });
});
