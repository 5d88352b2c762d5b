import type { Context } from 'unleash-client';
import type { FeatureInterface } from 'unleash-client/lib/feature';
import type { Constraint } from 'unleash-client/lib/strategy/strategy';
import type { FastEvaluation, SdkVariant } from '../upstream/feature-repository';
import { toEvaluatedToggle } from '../upstream/unleash-repository';

/** One evaluated result of a toggle: its usage count and its pre-serialised response entry. */
export interface Outcome {
  readonly enabled: boolean;
  /** Variant name as the SDK counts it. */
  readonly variant: string;
  /** `JSON.stringify` of the response entry, byte-identical to serialising the evaluated toggle. */
  readonly fragment: string;
}

/** What is known about one toggle for a definitions revision, before any context is seen. */
export interface CompiledToggle {
  readonly name: string;
  readonly impressionData: boolean;
  /** Its result when it cannot depend on the context, the clock or chance; evaluated once. */
  readonly constant: Outcome | undefined;
  /** False when a custom strategy or a malformed definition is involved: never answered from a cache. */
  readonly cacheable: boolean;
  /** Epoch ms of every date a DATE_AFTER/DATE_BEFORE constraint of it (or of a parent) compares with. */
  readonly dateBoundaries: readonly number[];
  /** Outcomes seen so far, by variant name; reused when flags and payload object are the same. */
  readonly outcomes: Map<string, KnownOutcome[]>;
  /**
   * The context fields its evaluation reads (sorted), when they are few-valued ones (not userId or
   * sessionId; remoteAddress is allowed) and only built-in code runs: its results are then remembered per
   * combination of their values in `memo`.
   */
  readonly inputs: readonly string[] | undefined;
  readonly memo: Map<string, MemoEntry>;
}

interface KnownOutcome {
  readonly featureEnabled: boolean;
  readonly variantEnabled: boolean;
  readonly payload: unknown;
  readonly outcome: Outcome;
}

/** A remembered result, valid while the clock is inside `(validFrom, validUntil)`. */
export interface MemoEntry {
  readonly outcome: Outcome;
  readonly validFrom: number;
  readonly validUntil: number;
}

const FALLBACK: SdkVariant = { name: 'disabled', enabled: false };
const MAX_OUTCOMES_PER_TOGGLE = 32;

/** The outcome of one SDK answer, with the fragment reused across requests. */
export function outcomeOf(toggle: CompiledToggle, result: SdkVariant): Outcome {
  const enabled = Boolean(result.feature_enabled);
  let known = toggle.outcomes.get(result.name);
  if (known) {
    for (const k of known) {
      if (k.featureEnabled === enabled && k.variantEnabled === result.enabled && k.payload === result.payload)
        return k.outcome;
    }
  }
  const outcome: Outcome = {
    enabled,
    variant: result.name,
    fragment: JSON.stringify(toEvaluatedToggle(toggle.name, toggle.impressionData, result)),
  };
  if (!known) {
    if (toggle.outcomes.size >= MAX_OUTCOMES_PER_TOGGLE) return outcome;
    known = [];
    toggle.outcomes.set(result.name, known);
  }
  if (known.length < 4)
    known.push({ featureEnabled: enabled, variantEnabled: result.enabled, payload: result.payload, outcome });
  return outcome;
}

/** Context fields whose values differ per user or device: remembering results by them would not pay. */
const PER_USER = new Set(['userId', 'sessionId', 'remoteAddress']);
/**
 * Of those, the ones a toggle's memo still keys by: many users share an address (offices, NAT,
 * mobile carriers), and an IP strategy's address-list parsing is the costliest built-in check.
 */
const SHARED_PER_USER = new Set(['remoteAddress']);

/** The fields a variant selection with this stickiness reads. */
function seedFields(stickiness: string | undefined, into: Set<string>): void {
  if (!stickiness || stickiness === 'default') for (const f of PER_USER) into.add(f);
  else into.add(stickiness);
}

/**
 * Every context field the SDK's built-in code may read when evaluating these definitions, or
 * undefined when code we do not know runs (a custom strategy) or the shape is unusual. Mirrors
 * `unleash-client` 6: constraints read `context[name] ?? context.properties[name]` (date operators
 * read only `currentTime`), strategies read the fields below, variant selection reads its
 * stickiness field (or userId/sessionId/remoteAddress) and its overrides' fields. Chance and the
 * clock are not fields: they are dealt with where results are remembered.
 */
function inputsOf(features: readonly FeatureInterface[], fast: FastEvaluation): Set<string> | undefined {
  const fields = new Set<string>();
  for (const feature of features) {
    if (!Array.isArray(feature.strategies)) return undefined;
    for (const strategy of feature.strategies) {
      if (!fast.isBuiltInStrategy(strategy.name)) return undefined;
      const parameters = (strategy.parameters ?? {}) as Record<string, unknown>;
      switch (strategy.name) {
        case 'flexibleRollout': {
          fields.add('featureToggle');
          const stickiness = typeof parameters.stickiness === 'string' ? parameters.stickiness : '';
          if (!stickiness || stickiness === 'default') {
            fields.add('userId');
            fields.add('sessionId');
          } else if (stickiness !== 'random') fields.add(stickiness);
          break;
        }
        case 'gradualRolloutUserId':
        case 'userWithId':
          fields.add('userId');
          break;
        case 'gradualRolloutSessionId':
          fields.add('sessionId');
          break;
        case 'remoteAddress':
          fields.add('remoteAddress');
          break;
        default:
          break; // default, applicationHostname, gradualRolloutRandom, or unknown (skipped by the SDK)
      }
      const variants = strategy.variants ?? [];
      if (variants.length > 0) {
        const stickiness = variants[0].stickiness || parameters.stickiness;
        seedFields(typeof stickiness === 'string' ? stickiness : undefined, fields);
      }
      for (const v of variants) for (const o of v.overrides ?? []) fields.add(o.contextName);
    }
    for (const c of constraintsOf(feature, fast)) {
      fields.add(c.operator === 'DATE_AFTER' || c.operator === 'DATE_BEFORE' ? 'currentTime' : c.contextName);
    }
    const variants = feature.variants ?? [];
    if (variants.length > 0) seedFields(variants[0].stickiness, fields);
    for (const v of variants) for (const o of v.overrides ?? []) fields.add(o.contextName);
  }
  return fields;
}

function memoInputs(features: readonly FeatureInterface[], fast: FastEvaluation): string[] | undefined {
  const fields = inputsOf(features, fast);
  if (!fields) return undefined;
  for (const f of fields) {
    if (
      (PER_USER.has(f) && !SHARED_PER_USER.has(f)) ||
      f === 'properties' ||
      f === '__proto__' ||
      f in Object.prototype
    )
      return undefined;
  }
  return [...fields].sort();
}

/**
 * The key of a context for a toggle's memo: the root value and the property of each input field,
 * length-prefixed so no two different combinations share a key. Only for string-valued contexts.
 */
export function memoKey(inputs: readonly string[], context: Context): string {
  const root = context as Record<string, unknown>;
  const properties = context.properties as Record<string, unknown> | undefined;
  let key = '';
  for (const field of inputs) {
    const value = root[field];
    const property = properties?.[field];
    key += typeof value === 'string' ? `${value.length}:${value}` : '-';
    key += typeof property === 'string' ? `${property.length}:${property}` : '-';
  }
  return key;
}

const isEmpty = (list: readonly unknown[] | null | undefined) => !list || list.length === 0;

/**
 * True when the SDK's answer for this toggle is the same for every context at every time:
 * - a disabled toggle without dependencies is disabled with the fallback variant;
 * - an enabled toggle without dependencies or variants whose first strategy is the built-in
 *   `default` without constraints, segments or strategy variants (or that has no strategies) is
 *   enabled with the fallback variant: the SDK stops at that first strategy.
 */
function isConstant(feature: FeatureInterface, fast: FastEvaluation): boolean {
  if (!isEmpty(feature.dependencies) || !Array.isArray(feature.strategies)) return false;
  if (feature.enabled === false) return true;
  if (feature.enabled !== true || !isEmpty(feature.variants)) return false;
  const first = feature.strategies[0];
  if (!first) return true;
  return (
    first.name === 'default' &&
    fast.isBuiltInStrategy('default') &&
    isEmpty(first.constraints) &&
    isEmpty(first.segments) &&
    isEmpty(first.variants)
  );
}

function constraintsOf(feature: FeatureInterface, fast: FastEvaluation): Constraint[] {
  const out: Constraint[] = [];
  for (const strategy of Array.isArray(feature.strategies) ? feature.strategies : []) {
    out.push(...(strategy.constraints ?? []));
    for (const id of strategy.segments ?? []) out.push(...(fast.segment(id)?.constraints ?? []));
  }
  return out;
}

function usesOnlyBuiltIns(feature: FeatureInterface, fast: FastEvaluation): boolean {
  return Array.isArray(feature.strategies) && feature.strategies.every((s) => fast.isBuiltInStrategy(s.name));
}

/** Compiles one toggle. `lookup` resolves dependency parents by name. */
export function compileToggle(
  feature: FeatureInterface,
  fast: FastEvaluation,
  lookup: (name: string) => FeatureInterface | undefined,
): CompiledToggle {
  const parents = (feature.dependencies ?? [])
    .map((d) => lookup(d.feature))
    .filter((p): p is FeatureInterface => p !== undefined);
  const related = [feature, ...parents];
  const boundaries = new Set<number>();
  for (const f of related) {
    for (const c of constraintsOf(f, fast)) {
      if (c.operator !== 'DATE_AFTER' && c.operator !== 'DATE_BEFORE') continue;
      const at = new Date(c.value ?? '').getTime();
      if (!Number.isNaN(at)) boundaries.add(at);
    }
  }
  const toggle: CompiledToggle = {
    name: feature.name,
    impressionData: feature.impressionData === true,
    constant: undefined,
    cacheable: related.every((f) => usesOnlyBuiltIns(f, fast)),
    dateBoundaries: [...boundaries].sort((a, b) => a - b),
    outcomes: new Map(),
    inputs: memoInputs(related, fast),
    memo: new Map(),
  };
  if (!isConstant(feature, fast)) return toggle;
  const result: SdkVariant = { ...FALLBACK, feature_enabled: feature.enabled === true };
  return { ...toggle, constant: outcomeOf(toggle, result) };
}
