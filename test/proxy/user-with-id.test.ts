import fc from 'fast-check';
import type { Context } from 'unleash-client';
import UserWithIdStrategy from 'unleash-client/lib/strategy/user-with-id-strategy';
import { withListedUserIds } from '../../src/proxy/upstream/sdk/internals';

/** What a call answers, or that it threw. */
function outcome(run: () => boolean): boolean | 'threw' {
  try {
    return run();
  } catch {
    return 'threw';
  }
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

describe('userWithId from a set made once per list', () => {
  test("answers exactly what the SDK's UserWithIdStrategy answers, for any parameters and context", () => {
    const sdk = new UserWithIdStrategy();
    const listed = withListedUserIds(sdk);
    fc.assert(
      fc.property(parameters, contexts, (params, context) => {
        const p = params as Record<string, unknown>;
        // twice: the second answer comes from the kept set
        for (let n = 0; n < 2; n++) {
          expect(outcome(() => listed.isEnabled(p, context))).toBe(outcome(() => sdk.isEnabled(p, context)));
          expect(outcome(() => listed.getResult(p, context, [].values(), undefined).enabled)).toBe(
            outcome(() => sdk.getResult(p, context, [].values(), undefined).enabled),
          );
        }
      }),
      { numRuns: 10_000 },
    );
  });

  test('a user listed with spaces around commas is found, one not listed is not', () => {
    const listed = withListedUserIds(new UserWithIdStrategy());
    const params = { userIds: 'alice , bob,carol ,  dave' };
    expect(['alice', 'bob', 'carol', 'dave'].map((userId) => listed.isEnabled(params, { userId }))).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(listed.isEnabled(params, { userId: 'eve' })).toBe(false);
    expect(listed.isEnabled({ userIds: '' }, { userId: '' })).toBe(false);
  });
});
