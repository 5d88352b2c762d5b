import type { Context } from 'unleash-client';
import type { SdkVariant } from '../../upstream/feature-repository';
import { prefixedNormalizedValue } from '../../upstream/murmur-hash';
import { NotCompiled } from './constraints';
import { contextValue } from './scope';

/** The seed of the SDK's variant hash (`strategy/util.js`). */
const VARIANT_SEED = 86028157;

/** One variant definition as compiled: its answer made once, with the definition's own payload object. */
interface CompiledVariant {
  readonly weight: number;
  /** The SDK's answer when it is chosen (enabled toggle, enabled variant). */
  readonly answer: SdkVariant;
  /** Its overrides: the context field and the values that choose it. */
  readonly overrides: readonly { readonly field: string; readonly values: readonly string[] }[] | undefined;
}

/** Chooses a variant's answer for a context, or null when the SDK chooses none. */
export type VariantChoice = (context: Context) => SdkVariant | null;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function compileVariant(definition: unknown): CompiledVariant {
  if (!isRecord(definition)) throw new NotCompiled('a variant not an object');
  const { name, weight, overrides, payload } = definition;
  if (typeof name !== 'string' || typeof weight !== 'number' || !Number.isFinite(weight))
    throw new NotCompiled('variant shape');
  let compiled: CompiledVariant['overrides'];
  if (overrides !== undefined && overrides !== null) {
    if (!Array.isArray(overrides)) throw new NotCompiled('variant overrides not a list');
    compiled = overrides.map((o: unknown) => {
      if (!isRecord(o) || typeof o.contextName !== 'string' || !Array.isArray(o.values))
        throw new NotCompiled('variant override shape');
      return { field: o.contextName, values: o.values as string[] };
    });
  }
  const answer: SdkVariant = Object.freeze({
    name,
    enabled: true,
    payload: payload as SdkVariant['payload'],
    feature_enabled: true,
  });
  return { weight, answer, overrides: compiled };
}

/** `randomString` of the SDK's variant selection: a die for a context without the sticky field. */
const randomSeed = () => String(Math.round(Math.random() * 100000));

const DEFAULT_FIELDS = ['userId', 'sessionId', 'remoteAddress'];

/** `getSeed(context, stickiness)` of `unleash-client` 6 (`variant.js`). */
function seedOf(stickiness: string): (context: Context) => string {
  if (stickiness !== 'default')
    return (context) => {
      const value = contextValue(context, stickiness);
      return value ? value : randomSeed();
    };
  return (context) => {
    const record = context as Record<string, unknown>;
    for (const field of DEFAULT_FIELDS) {
      const value = record[field];
      if (typeof value === 'string' && value !== '') return value;
    }
    return randomSeed();
  };
}

/**
 * `selectVariantDefinition(groupId, stickiness, variants, context)` of `unleash-client` 6: no
 * variant when the weights add up to nothing; else the first variant with an override matching
 * the context; else the variant whose weight range holds the normalised hash of the seed.
 * `stickiness` is as the SDK passes it (undefined for its default).
 */
export function compileVariantChoice(
  groupId: unknown,
  stickiness: unknown,
  definitions: unknown,
): VariantChoice {
  if (!Array.isArray(definitions)) throw new NotCompiled('variants not a list');
  const variants = definitions.map(compileVariant);
  const totalWeight = variants.reduce((acc, v) => acc + v.weight, 0);
  if (totalWeight <= 0) return () => null;
  const sticky = stickiness === undefined ? 'default' : stickiness;
  if (typeof sticky !== 'string') throw new NotCompiled('variant stickiness not a string');
  if (typeof groupId !== 'string' && groupId !== undefined) throw new NotCompiled('groupId not a string');
  const seed = seedOf(sticky);
  const hash = prefixedNormalizedValue(`${groupId}:`, VARIANT_SEED);
  const withOverrides = variants.filter((v) => v.overrides);
  return (context) => {
    for (const variant of withOverrides) {
      for (const o of variant.overrides ?? []) {
        const value = contextValue(context, o.field);
        if (o.values.some((v) => v === value)) return variant.answer;
      }
    }
    const target = hash(seed(context), totalWeight);
    let counter = 0;
    for (const v of variants) {
      if (v.weight === 0) continue;
      counter += v.weight;
      if (counter < target) continue;
      return v.answer;
    }
    return null;
  };
}
