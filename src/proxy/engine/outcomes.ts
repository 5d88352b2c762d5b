import type { SdkVariant } from '../upstream/feature-repository';
import { DISABLED_ANSWER, ENABLED_ANSWER } from '../upstream/sdk/variant';
import type { CompiledToggle } from './compiled-toggle';
import { answerSlot } from './compiled/variants';
import { toEvaluatedToggle, toggleEntry } from './toggle-json';

/** One evaluated result of a toggle: what its usage counts and its pre-serialised response entry. */
export interface Outcome {
  /** The toggle's name. */
  readonly name: string;
  /** Its number among the revision's interned outcomes (`Plan.outcomes`), -1 when not interned. */
  readonly id: number;
  readonly enabled: boolean;
  /** Variant name as the SDK counts it. */
  readonly variant: string;
  /** The response entry (`toggleEntry`), byte-identical to serialising the evaluated toggle. */
  readonly entry: Buffer;
}

/** An outcome a toggle has seen, with the fields of the SDK's answer it was interned for. */
export interface KnownOutcome {
  readonly featureEnabled: boolean;
  readonly variantEnabled: boolean;
  readonly payload: unknown;
  readonly outcome: Outcome;
}

/** `Outcome.id` of a quarantined toggle's answer: disabled, never counted. */
export const QUARANTINED = -3;
const MAX_OUTCOMES_PER_TOGGLE = 32;
/** Outcomes interned per variant name of a toggle (flags and payload objects differing). */
const MAX_OUTCOMES_PER_VARIANT = 4;

/**
 * The outcome of one SDK answer, with the fragment reused across requests. The adapter and the
 * engine answer the two fallback results (disabled; enabled without a variant) with one object
 * each, and the engine numbers its variant answers (`answerSlot`), so most answers find their
 * outcome in the toggle's `bySlot`. A variant answer of the SDK itself is looked up by its fields.
 */
export function outcomeOf(toggle: CompiledToggle, result: SdkVariant): Outcome {
  if (result === DISABLED_ANSWER) {
    if (toggle.off === undefined) {
      toggle.off = internedOutcome(toggle, result);
      toggle.offId = toggle.off.id;
    }
    return toggle.off;
  }
  if (result === ENABLED_ANSWER) {
    if (toggle.on === undefined) {
      toggle.on = internedOutcome(toggle, result);
      toggle.onId = toggle.on.id;
    }
    return toggle.on;
  }
  const slot = toggle.engine !== undefined ? answerSlot(result) : -1;
  if (slot < 0) return internedOutcome(toggle, result);
  let known = toggle.bySlot[slot];
  if (known === undefined) {
    known = internedOutcome(toggle, result);
    toggle.bySlot[slot] = known;
  }
  return known;
}

/**
 * An evaluation's result as the answer loop wants it: the interned outcome's id (for the two
 * fallback answers read from the toggle itself, the outcome object untouched), or the outcome
 * when it is not interned.
 */
export function evaluatedOf(toggle: CompiledToggle, result: SdkVariant): number | Outcome {
  if (result === DISABLED_ANSWER && toggle.offId >= 0) return toggle.offId;
  if (result === ENABLED_ANSWER && toggle.onId >= 0) return toggle.onId;
  const outcome = outcomeOf(toggle, result);
  return outcome.id >= 0 ? outcome.id : outcome;
}

/** The toggle's outcome for these fields, interned while the toggle's bounds allow, loose after. */
function internedOutcome(toggle: CompiledToggle, result: SdkVariant): Outcome {
  const enabled = Boolean(result.feature_enabled);
  let known = toggle.outcomes.get(result.name);
  if (known) {
    for (const k of known) {
      if (k.featureEnabled === enabled && k.variantEnabled === result.enabled && k.payload === result.payload)
        return k.outcome;
    }
  }
  const entry = toggleEntry(toEvaluatedToggle(toggle.name, toggle.impressionData, result));
  const loose = (): Outcome => ({ name: toggle.name, id: -1, enabled, variant: result.name, entry });
  if (!known) {
    if (toggle.outcomes.size >= MAX_OUTCOMES_PER_TOGGLE) return loose();
    known = [];
    toggle.outcomes.set(result.name, known);
  }
  if (known.length >= MAX_OUTCOMES_PER_VARIANT) return loose();
  const outcome: Outcome = {
    name: toggle.name,
    id: toggle.interned.nextId,
    enabled,
    variant: result.name,
    entry,
  };
  toggle.interned.add(outcome);
  known.push({ featureEnabled: enabled, variantEnabled: result.enabled, payload: result.payload, outcome });
  return outcome;
}
