import { createRequire } from 'node:module';

/**
 * MurmurHash3, x86 32-bit flavour, exactly as `murmurhash3js` 3.0.1 computes it. `unleash-client`
 * hashes `groupId:stickinessValue` with it for every gradual rollout and every variant choice, so
 * a new user costs one hash per such toggle. Same results for every string: each UTF-16 code unit
 * contributes its low byte (`charCodeAt(i) & 0xff`, as the library reads it), an empty or missing
 * key hashes as '', the seed is read as a 32-bit integer. The library multiplies 32-bit words in
 * two 16-bit halves on doubles; `Math.imul` gives the same product modulo 2^32 in one instruction.
 */
export function murmurHash32(key: string, seed = 0): number {
  const text = key || '';
  const length = text.length;
  const blocks = length - (length % 4);
  let h1 = seed | 0;
  let i = 0;
  for (; i < blocks; i += 4) {
    let k1 =
      (text.charCodeAt(i) & 0xff) |
      ((text.charCodeAt(i + 1) & 0xff) << 8) |
      ((text.charCodeAt(i + 2) & 0xff) << 16) |
      ((text.charCodeAt(i + 3) & 0xff) << 24);
    k1 = Math.imul(k1, 0xcc9e2d51);
    k1 = (k1 << 15) | (k1 >>> 17);
    k1 = Math.imul(k1, 0x1b873593);
    h1 ^= k1;
    h1 = (h1 << 13) | (h1 >>> 19);
    h1 = (Math.imul(h1, 5) + 0xe6546b64) | 0;
  }
  const rest = length - blocks;
  if (rest > 0) {
    let k1 = text.charCodeAt(i) & 0xff;
    if (rest > 1) k1 ^= (text.charCodeAt(i + 1) & 0xff) << 8;
    if (rest > 2) k1 ^= (text.charCodeAt(i + 2) & 0xff) << 16;
    k1 = Math.imul(k1, 0xcc9e2d51);
    k1 = (k1 << 15) | (k1 >>> 17);
    k1 = Math.imul(k1, 0x1b873593);
    h1 ^= k1;
  }
  h1 ^= length;
  h1 ^= h1 >>> 16;
  h1 = Math.imul(h1, 0x85ebca6b);
  h1 ^= h1 >>> 13;
  h1 = Math.imul(h1, 0xc2b2ae35);
  h1 ^= h1 >>> 16;
  return h1 >>> 0;
}

interface MurmurLibrary {
  x86?: { hash32?: unknown };
}

/** The `murmurhash3js` instance `unleash-client` itself loads (resolved from its directory). */
export function sdkMurmurLibrary(): MurmurLibrary {
  const fromSdk = createRequire(require.resolve('unleash-client'));
  return fromSdk('murmurhash3js') as MurmurLibrary;
}

/**
 * Puts `murmurHash32` in place of the library's `x86.hash32`, which the SDK looks up on every call
 * (`murmurHash3.x86.hash32(...)` in `strategy/util.js`). Idempotent; returns false, changing nothing,
 * when the library does not have the shape of 3.x. The library's own function stays reachable as
 * `hash32Original` for the test that compares the two.
 */
export function useFastMurmurHash(): boolean {
  const x86 = sdkMurmurLibrary().x86;
  if (!x86 || typeof x86.hash32 !== 'function') return false;
  if (x86.hash32 === murmurHash32) return true;
  Object.defineProperty(x86, 'hash32Original', { value: x86.hash32, configurable: true });
  x86.hash32 = murmurHash32;
  return true;
}
