import fc from 'fast-check';
import { normalizedStrategyValue, normalizedVariantValue } from 'unleash-client/lib/strategy/util';
import { murmurHash32, normalizedValue } from '../../src/proxy/upstream/murmur-hash';
import { sdkHashUtil, sdkMurmurLibrary, useFastRolloutHash } from '../../src/proxy/upstream/sdk/fast-hash';

type Hash = (key: string, seed?: number) => number;

/** The library's own function, before or after the proxy put its own in place. */
function libraryHash(): Hash {
  const x86 = sdkMurmurLibrary().x86 as { hash32: Hash; hash32Original?: Hash };
  return x86.hash32Original ?? x86.hash32;
}

/** Strings as rollouts see them: ASCII ids, any UTF-16 (lone surrogates too), every length mod 4. */
const keys = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 40 }),
  fc.constantFrom('', 'a', 'ab', 'abc', 'abcd', 'group:user-1', 'ü', '\uD83D', 'x'.repeat(1000)),
);
const seeds = fc.oneof(fc.constantFrom(0, 86028157), fc.integer(), fc.nat());

describe("the SDK's rollout hash", () => {
  test('murmurHash32 equals murmurhash3js x86.hash32 for any string and seed', () => {
    const original = libraryHash();
    fc.assert(
      fc.property(keys, seeds, (key, seed) => {
        expect(murmurHash32(key, seed)).toBe(original(key, seed));
      }),
      { numRuns: 20_000 },
    );
    expect(murmurHash32('')).toBe(original(''));
  });

  test("once in place, the SDK's strategy and variant buckets are unchanged and the library calls ours", () => {
    const original = libraryHash();
    const before = ['u1', 'user-42', 'ñandú', '\uD83D'].map((id) => [
      normalizedStrategyValue(id, 'toggle-a'),
      normalizedVariantValue(id, 'toggle-a', 1000),
    ]);
    expect(useFastRolloutHash()).toBe(true);
    expect(useFastRolloutHash()).toBe(true); // idempotent
    const x86 = sdkMurmurLibrary().x86 as { hash32: Hash };
    expect(x86.hash32).toBe(murmurHash32);
    expect(libraryHash()).toBe(original);
    const after = ['u1', 'user-42', 'ñandú', '\uD83D'].map((id) => [
      normalizedStrategyValue(id, 'toggle-a'),
      normalizedVariantValue(id, 'toggle-a', 1000),
    ]);
    expect(after).toEqual(before);
    // one fixed value, so the two cannot drift together
    expect(murmurHash32('My hovercraft is full of eels.', 25)).toBe(2520298415);
  });

  test("normalizedValue equals the library's hash of `groupId:id` for any prefix length, id and normalizer", () => {
    const original = libraryHash();
    fc.assert(
      fc.property(
        keys,
        keys,
        fc.oneof(fc.constantFrom(100, 1000), fc.integer({ min: 1, max: 100_000 })),
        seeds,
        (groupId, id, normalizer, seed) => {
          // twice: the second call continues from the kept prefix state
          for (let n = 0; n < 2; n++) {
            expect(normalizedValue(id, groupId, normalizer, seed)).toBe(
              (original(`${groupId}:${id}`, seed) % normalizer) + 1,
            );
          }
        },
      ),
      { numRuns: 20_000 },
    );
  });

  test("once in place, the SDK's normalizedStrategyValue and normalizedVariantValue answer what they did, for any argument", () => {
    expect(useFastRolloutHash()).toBe(true);
    const util = sdkHashUtil() as Record<string, (...args: unknown[]) => number>;
    expect(util.normalizedStrategyValue).not.toBe(util.normalizedStrategyValueOriginal);
    const values = fc.oneof(keys, fc.integer(), fc.constantFrom(undefined, null, true, 1.5));
    fc.assert(
      fc.property(values, values, fc.integer({ min: 1, max: 10_000 }), (id, groupId, normalizer) => {
        expect(util.normalizedStrategyValue(id, groupId)).toBe(
          util.normalizedStrategyValueOriginal(id, groupId),
        );
        expect(util.normalizedVariantValue(id, groupId, normalizer)).toBe(
          util.normalizedVariantValueOriginal(id, groupId, normalizer),
        );
      }),
      { numRuns: 5_000 },
    );
    // the strategies call the module's function: a flexible rollout of one user lands as before
    expect(normalizedStrategyValue('user-42', 'toggle-a')).toBe(
      util.normalizedStrategyValueOriginal('user-42', 'toggle-a'),
    );
  });
});
