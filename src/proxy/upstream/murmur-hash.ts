/**
 * MurmurHash3, x86 32-bit flavour, exactly as `murmurhash3js` 3.0.1 computes it. `unleash-client`
 * hashes `groupId:stickinessValue` with it for every gradual rollout and every variant choice, so
 * a new user costs one hash per such toggle. Same results for every string: each UTF-16 code unit
 * contributes its low byte (`charCodeAt(i) & 0xff`, as the library reads it), an empty or missing
 * key hashes as '', the seed is read as a 32-bit integer. The library multiplies 32-bit words in
 * two 16-bit halves on doubles; `Math.imul` gives the same product modulo 2^32 in one instruction.
 */
export function murmurHash32(key: string, seed = 0): number {
  return continueHash({ h1: seed | 0, tail: 0, tailLength: 0, length: 0 }, key || '');
}

/** The hash state after a key's first characters: continue it with `continueHash`. */
export interface HashPrefix {
  /** State after the prefix's whole 4-byte blocks. */
  readonly h1: number;
  /** The bytes of the last, partial block (little-endian) and how many there are (0–3). */
  readonly tail: number;
  readonly tailLength: number;
  readonly length: number;
}

/** The low bytes of four characters from `i`, little-endian: one block as the library reads it. */
const blockAt = (text: string, i: number): number =>
  (text.charCodeAt(i) & 0xff) |
  ((text.charCodeAt(i + 1) & 0xff) << 8) |
  ((text.charCodeAt(i + 2) & 0xff) << 16) |
  ((text.charCodeAt(i + 3) & 0xff) << 24);

function scramble(block: number): number {
  const k1 = Math.imul(block, 0xcc9e2d51);
  return Math.imul((k1 << 15) | (k1 >>> 17), 0x1b873593);
}

function mixBlock(h1: number, block: number): number {
  const h = h1 ^ scramble(block);
  return (Math.imul((h << 13) | (h >>> 19), 5) + 0xe6546b64) | 0;
}

/** The hash state after `prefix`, for keys that start with it (`continueHash`). */
export function hashPrefix(prefix: string, seed: number): HashPrefix {
  const length = prefix.length;
  const blocks = length - (length % 4);
  let h1 = seed | 0;
  for (let i = 0; i < blocks; i += 4) h1 = mixBlock(h1, blockAt(prefix, i));
  let tail = 0;
  for (let i = blocks; i < length; i++) tail |= (prefix.charCodeAt(i) & 0xff) << (8 * (i - blocks));
  return { h1, tail, tailLength: length - blocks, length };
}

/** `murmurHash32(prefix + rest, seed)` from the prefix's state: the prefix is not read again. */
export function continueHash(prefix: HashPrefix, rest: string): number {
  const n = rest.length;
  let h1 = prefix.h1;
  let block = prefix.tail;
  let filled = prefix.tailLength;
  let i = 0;
  if (filled > 0) {
    while (filled < 4 && i < n) block |= (rest.charCodeAt(i++) & 0xff) << (8 * filled++);
    if (filled === 4) {
      h1 = mixBlock(h1, block);
      block = 0;
      filled = 0;
    }
  }
  if (filled === 0) {
    for (; i + 4 <= n; i += 4) h1 = mixBlock(h1, blockAt(rest, i));
    while (i < n) block |= (rest.charCodeAt(i++) & 0xff) << (8 * filled++);
  }
  if (filled > 0) h1 ^= scramble(block);
  h1 ^= prefix.length + n;
  h1 ^= h1 >>> 16;
  h1 = Math.imul(h1, 0x85ebca6b);
  h1 ^= h1 >>> 13;
  h1 = Math.imul(h1, 0xc2b2ae35);
  h1 ^= h1 >>> 16;
  return h1 >>> 0;
}

/** Numbers kept per alignment (`PreparedKey`): head, its length, tail, its length, whole blocks. */
const PARTS = 5;
/** Whole blocks per alignment a key holds room for before it grows (keys up to 32 characters). */
const MIN_STRIDE = 8;

/**
 * A key prepared once for hashing after many prefixes (`hashAfter`): a request's user id after
 * every rollout's `groupId:`. The key's blocks do not depend on the prefix, only on where the
 * prefix's partial block ends (4 alignments): they are read and scrambled once per alignment, so
 * a prefix only mixes them in. `hashAfter(prefix, key)` equals `continueHash(prefix, key.key)`.
 *
 * Per alignment `a`, when prepared (`ready`'s bit `a`): `parts[PARTS * a ..]` holds the key's first
 * bytes that complete the prefix's partial block (little-endian) and how many, the last partial
 * block scrambled and how many bytes it has, and the count of whole blocks between them, which
 * are in `blocks[stride * a ..]`, scrambled. A key can be `reset` to another and keeps its memory
 * (a request's scope reuses a few: `RequestScope.key`).
 */
export class PreparedKey {
  readonly parts = new Int32Array(4 * PARTS);
  blocks: Int32Array;
  stride: number;
  /** Bit `a` set once alignment `a` is prepared. */
  ready = 0;
  key: string;

  constructor(key: string) {
    this.key = key;
    this.stride = Math.max(MIN_STRIDE, (key.length >> 2) + 1);
    this.blocks = new Int32Array(4 * this.stride);
  }

  /** Makes this the prepared form of `key` (nothing prepared yet), in its own memory when it fits. */
  reset(key: string): void {
    this.key = key;
    this.ready = 0;
    const stride = (key.length >> 2) + 1;
    if (stride > this.stride) {
      this.stride = stride;
      this.blocks = new Int32Array(4 * stride);
    }
  }

  /** Prepares the key's blocks for a prefix whose partial block holds `tailLength` bytes. */
  align(tailLength: number): void {
    const key = this.key;
    const n = key.length;
    const headLength = tailLength === 0 ? 0 : Math.min(n, 4 - tailLength);
    let head = 0;
    for (let i = 0; i < headLength; i++) head |= (key.charCodeAt(i) & 0xff) << (8 * i);
    // the key ends inside the prefix's partial block: no blocks of its own
    const rest = tailLength > 0 && tailLength + headLength < 4 ? 0 : n - headLength;
    const count = rest >> 2;
    const blocks = this.blocks;
    const start = this.stride * tailLength;
    for (let j = 0; j < count; j++) blocks[start + j] = scramble(blockAt(key, headLength + 4 * j));
    let tail = 0;
    const tailStart = headLength + 4 * count;
    const tailBytes = rest - 4 * count;
    for (let i = 0; i < tailBytes; i++) tail |= (key.charCodeAt(tailStart + i) & 0xff) << (8 * i);
    const parts = this.parts;
    const at = PARTS * tailLength;
    parts[at] = head;
    parts[at + 1] = headLength;
    parts[at + 2] = tailBytes > 0 ? scramble(tail) : 0;
    parts[at + 3] = tailBytes;
    parts[at + 4] = count;
    this.ready |= 1 << tailLength;
  }
}

/** `continueHash(prefix, key.key)`, mixing the key's prepared blocks. */
export function hashAfter(prefix: HashPrefix, key: PreparedKey): number {
  return mixAfter(prefix, key) >>> 0;
}

/**
 * `(continueHash(prefix, key.key) % normalizer) + 1`, what the SDK's `normalizedValue` answers: in
 * 32-bit integer arithmetic for an integer normalizer up to 2^30 (a rollout's 100, a variant
 * split's total weight), as the remainder of an unsigned hash would otherwise be computed on
 * doubles.
 */
export function normalizedAfter(prefix: HashPrefix, key: PreparedKey, normalizer: number): number {
  return normalizedAfterState(prefix.h1, prefix.tail, prefix.tailLength, prefix.length, key, normalizer);
}

/** The hash of `hashAfter` as a signed 32-bit integer (the same bits). */
function mixAfter(prefix: HashPrefix, key: PreparedKey): number {
  return mixAfterState(prefix.h1, prefix.tail, prefix.tailLength, prefix.length, key);
}

/**
 * `normalizedAfter` from a prefix's state given field by field (`HashPrefix`), for callers that keep
 * prefixes in typed arrays (`engine/compiled/flat.ts`).
 */
export function normalizedAfterState(
  h1: number,
  tail: number,
  tailLength: number,
  length: number,
  key: PreparedKey,
  normalizer: number,
): number {
  const h = mixAfterState(h1, tail, tailLength, length, key);
  if ((normalizer | 0) === normalizer && normalizer > 0 && normalizer <= 0x40000000) {
    // h as unsigned is 2 * (h >>> 1) + (h & 1); every step stays below 2^31. `n` is the same number
    // typed as a 32-bit integer: a normaliser that arrives as a double (a weight total read from a
    // Float64Array) would otherwise make V8 take every remainder here on doubles (~3 × the hash).
    const n = normalizer | 0;
    return ((((h >>> 1) % n) * 2 + (h & 1)) % n) + 1;
  }
  return ((h >>> 0) % normalizer) + 1;
}

/** `mixAfter` from the prefix's fields. */
function mixAfterState(
  prefixH1: number,
  prefixTail: number,
  prefixTailLength: number,
  prefixLength: number,
  key: PreparedKey,
): number {
  if ((key.ready & (1 << prefixTailLength)) === 0) key.align(prefixTailLength);
  const parts = key.parts;
  const at = PARTS * prefixTailLength;
  let h1 = prefixH1;
  if (prefixTailLength > 0) {
    const block = prefixTail | (parts[at] << (8 * prefixTailLength));
    if (prefixTailLength + parts[at + 1] === 4) h1 = mixBlock(h1, block);
    else h1 ^= scramble(block);
  }
  const blocks = key.blocks;
  const start = key.stride * prefixTailLength;
  const end = start + parts[at + 4];
  for (let j = start; j < end; j++) {
    const h = h1 ^ blocks[j];
    h1 = (Math.imul((h << 13) | (h >>> 19), 5) + 0xe6546b64) | 0;
  }
  if (parts[at + 3] > 0) h1 ^= parts[at + 2];
  h1 ^= prefixLength + key.key.length;
  h1 ^= h1 >>> 16;
  h1 = Math.imul(h1, 0x85ebca6b);
  h1 ^= h1 >>> 13;
  h1 = Math.imul(h1, 0xc2b2ae35);
  h1 ^= h1 >>> 16;
  return h1;
}

/** Prefixes (`groupId:`) of one seed; cleared when it holds this many (names come and go with definitions). */
const MAX_PREFIXES = 20_000;

/** `normalizedValue` for one seed, keeping the hash state after `groupId:` per group. */
export function normalizedValues(seed: number): (id: string, groupId: string, normalizer: number) => number {
  const prefixes = new Map<string, HashPrefix>();
  return (id, groupId, normalizer) => {
    let prefix = prefixes.get(groupId);
    if (prefix === undefined) {
      if (prefixes.size >= MAX_PREFIXES) prefixes.clear();
      prefix = hashPrefix(`${groupId}:`, seed);
      prefixes.set(groupId, prefix);
    }
    return (continueHash(prefix, id) % normalizer) + 1;
  };
}

const bySeed = new Map<number, (id: string, groupId: string, normalizer: number) => number>();

/**
 * What the SDK's `normalizedValue(id, groupId, normalizer, seed)` answers:
 * `murmurhash3js.x86.hash32(`${groupId}:${id}`, seed) % normalizer + 1`, for string ids and group
 * ids; the state after `groupId:` is kept per group, so a rollout hashes only the user's id.
 */
export function normalizedValue(id: string, groupId: string, normalizer: number, seed: number): number {
  let values = bySeed.get(seed);
  if (values === undefined) {
    values = normalizedValues(seed);
    bySeed.set(seed, values);
  }
  return values(id, groupId, normalizer);
}
