import type { SdkVariant } from '../../upstream/feature-repository';
import { continueHash, hashPrefix, normalizedAfter, type HashPrefix } from '../../upstream/murmur-hash';
import { DISABLED_ANSWER, ENABLED_ANSWER } from '../../upstream/sdk/variant';
import { NotCompiled } from './constraints';
import { fieldIndex, variantSeedOf, type RequestScope } from './scope';

/** The seed of the SDK's variant hash (`strategy/util.js`). */
const VARIANT_SEED = 86028157;

/**
 * The engine's answer for a chosen variant: what the SDK answers (enabled toggle, enabled variant,
 * the definition's own payload object) and its `slot`, a number unique among the answers one
 * compiled toggle can give (`AnswerSlots`), so the toggle finds what it prepared for this answer by
 * index, not by looking the object up.
 */
export interface EngineAnswer extends SdkVariant {
  readonly slot: number;
}

/** Slot of `DISABLED_ANSWER` and of `ENABLED_ANSWER` in every toggle; variant answers follow. */
export const DISABLED_SLOT = 0;
export const ENABLED_SLOT = 1;

/** Numbers the variant answers of one compiled toggle, after the two fallback slots. */
export class AnswerSlots {
  private next = ENABLED_SLOT + 1;
  take(): number {
    return this.next++;
  }
}

/**
 * The slot of an answer of a compiled toggle: the two fallback answers' fixed slots, else the
 * variant answer's own; -1 for an object the engine did not make.
 */
export function answerSlot(answer: SdkVariant): number {
  if (answer === DISABLED_ANSWER) return DISABLED_SLOT;
  if (answer === ENABLED_ANSWER) return ENABLED_SLOT;
  const slot = (answer as Partial<EngineAnswer>).slot;
  return typeof slot === 'number' ? slot : -1;
}

/** One variant definition as compiled: its answer made once, with the definition's own payload object. */
interface CompiledVariant {
  readonly weight: number;
  /** The SDK's answer when it is chosen (enabled toggle, enabled variant). */
  readonly answer: EngineAnswer;
  /** Its overrides: the context field (with its `fieldIndex`) and the values that choose it. */
  readonly overrides:
    | readonly { readonly field: string; readonly index: number; readonly values: readonly string[] }[]
    | undefined;
}

/**
 * A variant selection compiled: data read by `chooseVariant`, one function for every toggle and
 * strategy (a call per selection, no closures to call through).
 */
export interface VariantChoice {
  /** False when the weights add up to nothing: the SDK chooses no variant. */
  readonly weighted: boolean;
  readonly variants: readonly CompiledVariant[];
  /** The variants with overrides, in order. */
  readonly withOverrides: readonly CompiledVariant[];
  readonly totalWeight: number;
  /** The stickiness field (with its `fieldIndex`), or undefined for the SDK's default (userId, sessionId, remoteAddress). */
  readonly field: string | undefined;
  readonly fieldIndex: number;
  /** The hash state after `${groupId}:` with the variant seed. */
  readonly prefix: HashPrefix | undefined;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function compileVariant(definition: unknown, slots: AnswerSlots): CompiledVariant {
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
      return { field: o.contextName, index: fieldIndex(o.contextName), values: o.values as string[] };
    });
  }
  const answer: EngineAnswer = Object.freeze({
    name,
    enabled: true,
    payload: payload as SdkVariant['payload'],
    feature_enabled: true,
    slot: slots.take(),
  });
  return { weight, answer, overrides: compiled };
}

/** `randomString` of the SDK's variant selection: a die for a context without the sticky field. */
const randomSeed = () => String(Math.round(Math.random() * 100000));

/**
 * `getSeed(context, stickiness)` of `unleash-client` 6 (`variant.js`), for the scope's context;
 * undefined when the SDK throws its die (`randomSeed`).
 */
function seedOf(choice: VariantChoice, scope: RequestScope): string | undefined {
  return variantSeed(choice.field, choice.fieldIndex, scope);
}

/** `seedOf` for a choice's stickiness field (undefined for the default) and its `fieldIndex`. */
export function variantSeed(
  field: string | undefined,
  index: number,
  scope: RequestScope,
): string | undefined {
  if (field !== undefined) return scope.value(index, field) || undefined;
  return variantSeedOf(scope.userId, scope.sessionId, scope.context.remoteAddress);
}

/** The choice that never chooses: weights that add up to nothing. */
const NO_CHOICE: VariantChoice = {
  weighted: false,
  variants: [],
  withOverrides: [],
  totalWeight: 0,
  field: undefined,
  fieldIndex: -1,
  prefix: undefined,
};

/**
 * `selectVariantDefinition(groupId, stickiness, variants, context)` of `unleash-client` 6, compiled
 * (see `chooseVariant`). `stickiness` is as the SDK passes it (undefined for its default).
 */
export function compileVariantChoice(
  groupId: unknown,
  stickiness: unknown,
  definitions: unknown,
  /** The numbering of the answers of the toggle this choice belongs to. */
  slots: AnswerSlots,
): VariantChoice {
  if (!Array.isArray(definitions)) throw new NotCompiled('variants not a list');
  const variants = definitions.map((d: unknown) => compileVariant(d, slots));
  const totalWeight = variants.reduce((acc, v) => acc + v.weight, 0);
  if (totalWeight <= 0) return NO_CHOICE;
  const sticky = stickiness === undefined ? 'default' : stickiness;
  if (typeof sticky !== 'string') throw new NotCompiled('variant stickiness not a string');
  if (typeof groupId !== 'string' && groupId !== undefined) throw new NotCompiled('groupId not a string');
  return {
    weighted: true,
    variants,
    withOverrides: variants.filter((v) => v.overrides),
    totalWeight,
    field: sticky === 'default' ? undefined : sticky,
    fieldIndex: sticky === 'default' ? -1 : fieldIndex(sticky),
    prefix: hashPrefix(`${groupId}:`, VARIANT_SEED),
  };
}

/**
 * The variant `choice` picks for a context, or null when the SDK chooses none: no variant when the
 * weights add up to nothing; else the first variant with an override matching the context; else
 * the variant whose weight range holds the normalised hash of the seed.
 */
export function chooseVariant(choice: VariantChoice, scope: RequestScope): EngineAnswer | null {
  if (!choice.weighted || choice.prefix === undefined) return null;
  const withOverrides = choice.withOverrides;
  for (let i = 0; i < withOverrides.length; i++) {
    const variant = withOverrides[i];
    for (const o of variant.overrides ?? []) {
      const value = scope.value(o.index, o.field);
      if (o.values.some((v) => v === value)) return variant.answer;
    }
  }
  const seed = seedOf(choice, scope);
  const target =
    seed === undefined
      ? (continueHash(choice.prefix, randomSeed()) % choice.totalWeight) + 1
      : normalizedAfter(choice.prefix, scope.key(seed), choice.totalWeight);
  const variants = choice.variants;
  let counter = 0;
  for (let i = 0; i < variants.length; i++) {
    const v = variants[i];
    if (v.weight === 0) continue;
    counter += v.weight;
    if (counter < target) continue;
    return v.answer;
  }
  return null;
}
