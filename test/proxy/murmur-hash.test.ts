import fc from 'fast-check';
import { normalizedStrategyValue, normalizedVariantValue } from 'unleash-client/lib/strategy/util';
import { murmurHash32, sdkMurmurLibrary, useFastMurmurHash } from '../../src/proxy/upstream/murmur-hash';

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
    expect(useFastMurmurHash()).toBe(true);
    expect(useFastMurmurHash()).toBe(true); // idempotent
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
});
