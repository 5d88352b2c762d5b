/**
 * userWithId as the engine compiles it (a set made once per list, checked once per request),
 * against the SDK's own client, for lists with any spacing, empty lists and values of other types.
 */
import fc from 'fast-check';
import type { Context } from 'unleash-client';
import { Checks } from '../../../src/proxy/engine/compiled/checks';
import { NotCompiled } from '../../../src/proxy/engine/compiled/constraints';
import { RequestScope } from '../../../src/proxy/engine/compiled/scope';
import { compileFeature, type CompileSources } from '../../../src/proxy/engine/compiled/toggle';
import type { FeatureInterface } from '../../../src/proxy/upstream/sdk/types';
import { referenceSdk } from '../../support/reference-sdk';

const SOURCES: CompileSources = {
  isBuiltInStrategy: () => true,
  segment: () => undefined,
  feature: () => undefined,
};

/** The engine's answer for a toggle with one userWithId strategy, or 'not compiled' (the SDK evaluates it). */
function engineAnswer(
  parameters: unknown,
  contexts: readonly Context[],
): (boolean | 'threw')[] | 'not compiled' {
  const feature = {
    name: 't',
    enabled: true,
    strategies: [{ name: 'userWithId', parameters, constraints: [] }],
  } as unknown as FeatureInterface;
  const checks = new Checks();
  let evaluation;
  try {
    evaluation = compileFeature(feature, SOURCES, checks);
  } catch (err) {
    if (err instanceof NotCompiled) return 'not compiled';
    throw err;
  }
  const scope = new RequestScope(checks.size);
  return contexts.map((context) => {
    scope.begin(context);
    try {
      return evaluation.evaluate(scope).feature_enabled === true;
    } catch {
      return 'threw';
    }
  });
}

function sdkAnswer(parameters: unknown, contexts: readonly Context[]): (boolean | 'threw')[] {
  const sdk = referenceSdk(
    {
      features: [
        { name: 't', enabled: true, strategies: [{ name: 'userWithId', parameters, constraints: [] }] },
      ],
    },
    {},
  );
  return contexts.map((context) => {
    const answer = sdk('t', context);
    return answer === 'threw' ? 'threw' : answer.enabled;
  });
}

const ids = fc.oneof(
  fc.constantFrom('u1', 'u2', ' u1', 'u1 ', '', ' ', 'a,b', '\t', 'ü'),
  fc.string({ maxLength: 6 }),
);
/** userIds as definitions carry them: lists with any spacing, empty, and values of other types. */
const userIds = fc.oneof(
  fc
    .array(fc.tuple(ids, fc.constantFrom(',', ', ', ' ,', ' , ', ',\t', ',,')), { maxLength: 6 })
    .map((parts) => parts.map(([id, sep]) => id + sep).join('')),
  ids,
  fc.constantFrom<unknown>(undefined, null, 0, 42, true, ['u1']),
);
const parameters = fc.oneof(
  userIds.map((value) => ({ userIds: value })),
  fc.constantFrom<unknown>({}, null, undefined),
);
const contexts = fc.oneof(
  ids.map((userId): Context => ({ userId })),
  fc.constantFrom<Context>({}, { userId: undefined }, { properties: { userId: 'u1' } }),
);

describe('userWithId compiled by the engine', () => {
  test("answers exactly what the SDK's client answers, for any parameters and context, or is left to the SDK", () => {
    let compiled = 0;
    fc.assert(
      fc.property(parameters, fc.array(contexts, { minLength: 1, maxLength: 4 }), (params, list) => {
        const engine = engineAnswer(params, list);
        if (engine === 'not compiled') return;
        compiled += 1;
        // each context twice: the second answer comes from the same compiled set
        expect(engine).toEqual(sdkAnswer(params, list));
        expect(engineAnswer(params, [...list, ...list])).toEqual(sdkAnswer(params, [...list, ...list]));
      }),
      { numRuns: 5_000 },
    );
    // most parameter shapes compile: the comparison is not vacuous
    expect(compiled).toBeGreaterThan(2_500);
  });

  test('a user listed with spaces around commas is found, one not listed is not', () => {
    const params = { userIds: 'alice , bob,carol ,  dave' };
    const users = ['alice', 'bob', 'carol', 'dave', 'eve'].map((userId) => ({ userId }));
    expect(engineAnswer(params, users)).toEqual([true, true, true, true, false]);
    expect(engineAnswer({ userIds: '' }, [{ userId: '' }])).toEqual([false]);
    expect(sdkAnswer(params, users)).toEqual([true, true, true, true, false]);
  });
});
