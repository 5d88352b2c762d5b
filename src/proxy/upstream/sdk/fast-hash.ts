import { createRequire } from 'node:module';
import { murmurHash32, normalizedValues } from '../murmur-hash';

interface MurmurLibrary {
  x86?: { hash32?: unknown };
}

/** The `murmurhash3js` instance `unleash-client` itself loads (resolved from its directory). */
export function sdkMurmurLibrary(): MurmurLibrary {
  const fromSdk = createRequire(require.resolve('unleash-client'));
  return fromSdk('murmurhash3js') as MurmurLibrary;
}

interface SdkHashUtil {
  normalizedStrategyValue?: unknown;
  normalizedVariantValue?: unknown;
}

/** The SDK's module with `normalizedStrategyValue` and `normalizedVariantValue` (unleash-client 6). */
export function sdkHashUtil(): SdkHashUtil {
  return createRequire(require.resolve('unleash-client'))('./strategy/util') as SdkHashUtil;
}

/** The seeds of the SDK's two uses (unleash-client 6 `strategy/util.js`). */
const STRATEGY_SEED = 0;
const VARIANT_SEED = 86028157;

/**
 * Puts `normalizedValue` in place of the SDK's `normalizedStrategyValue` and
 * `normalizedVariantValue`, which its strategies and variant selection look up on the module at
 * every call (`(0, util_1.normalizedStrategyValue)(...)`), for string arguments; anything else goes
 * to the SDK's own function. Idempotent; false, changing nothing, when the module lacks them.
 */
function useFastNormalizedValues(): boolean {
  const util = sdkHashUtil();
  const strategy = util.normalizedStrategyValue;
  const variant = util.normalizedVariantValue;
  if (typeof strategy !== 'function' || typeof variant !== 'function') return false;
  if (Object.prototype.hasOwnProperty.call(util, 'normalizedStrategyValueOriginal')) return true;
  const strategyOriginal = strategy as (id: unknown, groupId: unknown) => number;
  const variantOriginal = variant as (id: unknown, groupId: unknown, normalizer: unknown) => number;
  Object.defineProperty(util, 'normalizedStrategyValueOriginal', { value: strategyOriginal });
  Object.defineProperty(util, 'normalizedVariantValueOriginal', { value: variantOriginal });
  const strategyValue = normalizedValues(STRATEGY_SEED);
  const variantValue = normalizedValues(VARIANT_SEED);
  util.normalizedStrategyValue = (id: unknown, groupId: unknown) =>
    typeof id === 'string' && typeof groupId === 'string'
      ? strategyValue(id, groupId, 100)
      : strategyOriginal(id, groupId);
  util.normalizedVariantValue = (id: unknown, groupId: unknown, normalizer: unknown) =>
    typeof id === 'string' && typeof groupId === 'string' && typeof normalizer === 'number'
      ? variantValue(id, groupId, normalizer)
      : variantOriginal(id, groupId, normalizer);
  return true;
}

/**
 * The SDK's rollout and variant hashing at a fraction of the cost, with the same results:
 * `useFastMurmurHash` and `useFastNormalizedValues`.
 */
export function useFastRolloutHash(): boolean {
  return useFastMurmurHash() && useFastNormalizedValues();
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
