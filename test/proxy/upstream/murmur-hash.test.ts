import fc from 'fast-check';
import { normalizedStrategyValue, normalizedVariantValue } from 'unleash-client/lib/strategy/util';
import {
  continueHash,
  hashAfter,
  hashPrefix,
  murmurHash32,
  normalizedAfter,
  normalizedValue,
  PreparedKey,
} from '../../../src/proxy/upstream/murmur-hash';
import { createRequire } from 'node:module';

type Hash = (key: string, seed?: number) => number;

/** `murmurhash3js`'s `x86.hash32`, as `unleash-client` loads it (the proxy never replaces it). */
function libraryHash(): Hash {
  const library = createRequire(require.resolve('unleash-client'))('murmurhash3js') as {
    x86: { hash32: Hash };
  };
  return library.x86.hash32;
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

  test('a key prepared once hashes after any prefix as continuing the prefix with the key does', () => {
    const original = libraryHash();
    fc.assert(
      fc.property(fc.array(keys, { minLength: 1, maxLength: 5 }), keys, seeds, (prefixes, key, seed) => {
        const prepared = new PreparedKey(key);
        // Every comparison of a run goes into one expect: jest's expect costs about 0.1 ms a call,
        // and one call per comparison (some 600,000) made this test take a minute. The same
        // comparisons, computed in the same order; a mismatch names its prefix and what differed.
        const received: Array<Record<string, number | string>> = [];
        const expected: Array<Record<string, number | string>> = [];
        // prefixes of every length mod 4 share the one prepared key, each alignment made once
        for (const prefix of prefixes) {
          const state = hashPrefix(prefix, seed);
          const got: Record<string, number | string> = { prefix };
          const want: Record<string, number | string> = { prefix };
          got.continued = hashAfter(state, prepared);
          want.continued = continueHash(state, key);
          got.whole = hashAfter(state, prepared);
          want.whole = original(prefix + key, seed);
          // the remainder in integer arithmetic, for the divisors rollouts and weights give, and others
          for (const normalizer of [
            1,
            7,
            100,
            1000,
            65_536,
            0x3fffffff,
            0x40000000,
            0x40000001,
            2 ** 32,
            33.5,
          ]) {
            got[`% ${normalizer}`] = normalizedAfter(state, prepared, normalizer);
            want[`% ${normalizer}`] = (original(prefix + key, seed) % normalizer) + 1;
          }
          received.push(got);
          expected.push(want);
        }
        expect(received).toStrictEqual(expected);
      }),
      { numRuns: 20_000 },
    );
  });

  test('a prepared key reset to other keys, longer or shorter, hashes each as the library does', () => {
    const original = libraryHash();
    fc.assert(
      fc.property(
        fc.array(keys, { minLength: 2, maxLength: 6 }),
        fc.array(keys, { minLength: 1, maxLength: 4 }),
        seeds,
        (list, prefixes, seed) => {
          const prepared = new PreparedKey(list[0]);
          const received: Array<Record<string, number | string>> = [];
          const expected: Array<Record<string, number | string>> = [];
          for (const key of list) {
            prepared.reset(key);
            for (const prefix of prefixes) {
              const state = hashPrefix(prefix, seed);
              received.push({ key, prefix, hash: hashAfter(state, prepared) });
              expected.push({ key, prefix, hash: original(prefix + key, seed) });
            }
          }
          expect(received).toStrictEqual(expected);
        },
      ),
      { numRuns: 5_000 },
    );
  });

  test('one fixed value, so the two cannot drift together', () => {
    expect(murmurHash32('My hovercraft is full of eels.', 25)).toBe(2520298415);
    expect(libraryHash()('My hovercraft is full of eels.', 25)).toBe(2520298415);
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

  test("normalizedValue answers what the SDK's normalizedStrategyValue and normalizedVariantValue answer for strings", () => {
    fc.assert(
      fc.property(keys, keys, fc.integer({ min: 1, max: 10_000 }), (id, groupId, normalizer) => {
        expect(normalizedValue(id, groupId, 100, 0)).toBe(normalizedStrategyValue(id, groupId));
        expect(normalizedValue(id, groupId, normalizer, 86028157)).toBe(
          normalizedVariantValue(id, groupId, normalizer),
        );
      }),
      { numRuns: 5_000 },
    );
  });
});
