import type { Context } from 'unleash-client';
import type { FeatureInterface } from '../upstream/sdk/types';
import type { FastEvaluation, FeatureRepository, SdkVariant } from '../upstream/feature-repository';
import { DISABLED_ANSWER, ENABLED_ANSWER } from '../upstream/sdk/variant';
import { listOf } from '../upstream/toggle-faults';
import {
  ALWAYS_DETERMINISTIC,
  combine,
  dateBoundaries,
  determinismOf,
  type Determinism,
} from './determinism';
import { definitionsDigest } from './etag';
import { toEvaluatedToggle, toggleEntry } from './toggle-json';
import { Checks } from './compiled/checks';
import { compileFeature, type ToggleEvaluation } from './compiled/toggle';
import { answerSlot } from './compiled/variants';
import { OutcomeTable } from './outcome-table';
import { ToggleSteps } from './toggle-steps';

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

/** What is known about one toggle for a definitions revision, before any context is seen. */
export interface CompiledToggle {
  readonly name: string;
  /** Its place in `Plan.toggles` (answer order). */
  readonly index: number;
  /** Its definition in the revision compiled (the SDK's own object), undefined when never evaluated from it. */
  readonly feature: FeatureInterface | undefined;
  readonly impressionData: boolean;
  /** Its result when it cannot depend on the context, the clock or chance; evaluated once. */
  readonly constant: Outcome | undefined;
  /** True when the toggle is quarantined (`upstream/toggle-faults.ts`): answered disabled, never evaluated or counted. */
  readonly quarantined: boolean;
  /** True when a custom strategy runs for it (or a parent): such code may change the context it gets. */
  readonly customCode: boolean;
  /** True when the SDK evaluates it alone on every request (irregular, or it could not be compiled). */
  readonly uncompiled: boolean;
  /**
   * Its evaluation compiled by the engine (`compiled/`), equal to the SDK's; undefined when the
   * SDK evaluates it (a custom strategy, or anything the engine does not know), or when it is constant.
   */
  readonly engine: ToggleEvaluation | undefined;
  /** What a context must carry for its result to be a pure function of the context. */
  readonly determinism: Determinism;
  /** Outcomes seen so far, by variant name; reused when flags and payload object are the same. */
  readonly outcomes: Map<string, KnownOutcome[]>;
  /**
   * The context fields its evaluation reads (sorted), when they are few-valued ones (not userId or
   * sessionId; remoteAddress is allowed) and only built-in code runs: its results are then
   * remembered per combination of their values in its group's memo (`MemoGroup`).
   */
  readonly inputs: readonly string[] | undefined;
  /**
   * Its memo group (`Plan.groups`): toggles with the same inputs and determinism share one, so a
   * request decides once per group whether and under which key results are remembered, and finds
   * the remembered results of the whole group with one lookup. -1 without `inputs`.
   */
  readonly group: number;
  /** Its place in a row of its group's memo. */
  readonly slot: number;
  /** Every outcome interned for the revision, shared by its toggles: an outcome's `id` is its index. */
  readonly interned: OutcomeTable;
  /**
   * Its outcomes of the engine's variant answers, by answer slot (`compiled/variants.ts`'
   * `answerSlot`): found by index (bounded by its definition), not by looking the answer object up.
   */
  readonly bySlot: (Outcome | undefined)[];
  /** Its outcomes of the two fallback answers, once seen: kept on the toggle itself, read most. */
  off: Outcome | undefined;
  on: Outcome | undefined;
  /** Their ids when interned, -1 otherwise: what `evaluatedOf` answers without reading the outcome. */
  offId: number;
  onId: number;
}

/**
 * Toggles remembered under the same key for a context: the same input fields and determinism. Its
 * memo keeps, per key (the values of the input fields), one row with a slot per toggle of the group.
 */
export interface MemoGroup {
  readonly inputs: readonly string[];
  readonly determinism: Determinism;
  /** Toggles in the group: the length of a row. */
  size: number;
  /** Rows by key, oldest first. */
  readonly memo: Map<string, MemoRow>;
}

/**
 * The remembered results of a memo group's toggles for one key, by `CompiledToggle.slot`: the
 * interned outcome's id, -1 when not known yet (only interned outcomes are remembered).
 */
export type MemoRow = Int32Array;

/** Every toggle of one definitions revision, compiled once when the revision is accepted. */
export interface Plan {
  readonly revision: number;
  /**
   * Digest of the definitions its answers depend on (`FeatureRepository.answerDefinitions`): the
   * part of every derived ETag that changes with them. For a project view that is its toggles, the
   * parents they depend on in other projects and the segments of both, not the whole environment:
   * a change elsewhere keeps its validators (no needless 200s), a change of a parent elsewhere
   * changes them (no stale 304).
   */
  readonly digest: string;
  readonly toggles: readonly CompiledToggle[];
  readonly byName: ReadonlyMap<string, CompiledToggle>;
  /** What a context needs for an answer listing every toggle to be pure. */
  readonly determinism: Determinism;
  /** Dates of every date constraint, sorted: the clock matters only as its window among them. */
  readonly dateBoundaries: readonly number[];
  /** Every interned outcome of the revision, by `Outcome.id` (grows as outcomes are seen, bounded per toggle). */
  readonly outcomes: readonly Outcome[];
  /** The same outcomes with what the answer loop reads of them in typed arrays. */
  readonly table: OutcomeTable;
  /** What the answer loop reads of each toggle, in typed arrays. */
  readonly steps: ToggleSteps;
  /** The memo groups of the revision, by `CompiledToggle.group`. */
  readonly groups: readonly MemoGroup[];
  /** How many distinct constraint checks the engine's toggles have: the size of a request's scope. */
  readonly checks: number;
  /** Toggles evaluated by the SDK on every evaluation (not constant, not quarantined, not compiled by the engine), by name. */
  readonly sdkEvaluated: readonly string[];
}

interface KnownOutcome {
  readonly featureEnabled: boolean;
  readonly variantEnabled: boolean;
  readonly payload: unknown;
  readonly outcome: Outcome;
}

const FALLBACK: SdkVariant = { name: 'disabled', enabled: false };

/** `Outcome.id` of a quarantined toggle's answer: disabled, never counted. */
export const QUARANTINED = -3;
const MAX_OUTCOMES_PER_TOGGLE = 32;

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
  if (known.length >= 4) return loose();
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

/** Context fields whose values differ per user or device: remembering results by them would not pay. */
const PER_USER = new Set(['userId', 'sessionId']);

/**
 * Every context field the SDK's built-in code may read when evaluating these definitions, or
 * undefined when code we do not know runs (a custom strategy) or the shape is unusual. Mirrors
 * `unleash-client` 6: constraints read `context[name] ?? context.properties[name]` (date operators
 * read only `currentTime`), strategies read the fields below, variant selection reads its
 * stickiness field (or userId/sessionId/remoteAddress) and its overrides' fields.
 */
function inputsOf(features: readonly FeatureInterface[], fast: FastEvaluation): Set<string> | undefined {
  const fields = new Set<string>();
  const seed = (stickiness: unknown) => {
    if (!stickiness || stickiness === 'default')
      for (const f of ['userId', 'sessionId', 'remoteAddress']) fields.add(f);
    else fields.add(String(stickiness));
  };
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
      const variants = listOf(strategy.variants);
      if (variants.length > 0) seed(variants[0].stickiness || parameters.stickiness);
      for (const v of variants) for (const o of listOf(v.overrides)) fields.add(o.contextName);
      for (const c of listOf(strategy.constraints)) fields.add(constraintField(c));
      for (const id of listOf(strategy.segments))
        for (const c of listOf(fast.segment(id)?.constraints)) fields.add(constraintField(c));
    }
    const variants = listOf(feature.variants);
    if (variants.length > 0) seed(variants[0].stickiness);
    for (const v of variants) for (const o of listOf(v.overrides)) fields.add(o.contextName);
  }
  return fields;
}

function constraintField(c: { operator: string; contextName: string }): string {
  return c.operator === 'DATE_AFTER' || c.operator === 'DATE_BEFORE' ? 'currentTime' : c.contextName;
}

function memoInputs(features: readonly FeatureInterface[], fast: FastEvaluation): string[] | undefined {
  const fields = inputsOf(features, fast);
  if (!fields) return undefined;
  for (const f of fields) {
    if (PER_USER.has(f) || f === 'properties' || f === '__proto__' || f in Object.prototype) return undefined;
  }
  return [...fields].sort();
}

/**
 * The key of a context for a toggle's memo: the root value and the property of each input field,
 * length-prefixed so no two different combinations share a key. Undefined when longer than
 * `maxLength`: such a context is evaluated and not remembered.
 */
export function memoKey(inputs: readonly string[], context: Context, maxLength: number): string | undefined {
  const root = context as Record<string, unknown>;
  const properties = context.properties as Record<string, unknown> | undefined;
  let key = '';
  for (const field of inputs) {
    const value = root[field];
    const property = properties?.[field];
    key += typeof value === 'string' ? `${value.length}:${value}` : '-';
    key += typeof property === 'string' ? `${property.length}:${property}` : '-';
    if (key.length > maxLength) return undefined;
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

/** What the toggles of one revision share: the interned outcomes, and one array per distinct input-field list. */
class PlanShared {
  readonly outcomes = new OutcomeTable();
  readonly groups: MemoGroup[] = [];
  /** The engine's distinct constraint checks of the revision. */
  readonly checks = new Checks();
  private readonly lists = new Map<string, readonly string[]>();
  private readonly groupIds = new Map<string, number>();

  /** The memo group of a toggle with these inputs and this determinism, and its slot there; -1 without inputs. */
  group(inputs: readonly string[] | undefined, determinism: Determinism): { group: number; slot: number } {
    if (inputs === undefined) return { group: -1, slot: -1 };
    const id = JSON.stringify([
      inputs,
      determinism === ALWAYS_DETERMINISTIC ? 'always' : determinism,
      determinism.chance.map((g) => g.key),
    ]);
    let group = this.groupIds.get(id);
    if (group === undefined) {
      group = this.groups.length;
      this.groups.push({ inputs, determinism, size: 0, memo: new Map() });
      this.groupIds.set(id, group);
    }
    const slot = this.groups[group].size;
    this.groups[group].size += 1;
    return { group, slot };
  }

  /** The revision's one array with these fields, so a request computes each distinct memo key once. */
  inputList(fields: readonly string[] | undefined): readonly string[] | undefined {
    if (fields === undefined) return undefined;
    const id = JSON.stringify(fields);
    const known = this.lists.get(id);
    if (known) return known;
    this.lists.set(id, fields);
    return fields;
  }
}

/**
 * The parents a toggle depends on, found as the SDK finds them: by name among every toggle of the
 * environment (`FastEvaluation.feature`), so a project view's toggle whose parent is in another
 * project is compiled with what its answer really reads. A missing parent makes the dependency
 * false whatever the context; it appearing later is a change of the view's definitions.
 */
export function parentsOf(feature: FeatureInterface, fast: FastEvaluation): FeatureInterface[] {
  return (Array.isArray(feature.dependencies) ? feature.dependencies : [])
    .map((d) => fast.feature(d.feature))
    .filter((p): p is FeatureInterface => p !== undefined);
}

/** Compiles one toggle; `related` receives the toggle and the parents it depends on. */
function compileToggle(
  feature: FeatureInterface,
  fast: FastEvaluation,
  shared: PlanShared,
  related: FeatureInterface[],
): Compiled {
  const parents = parentsOf(feature, fast);
  const own = [feature, ...parents];
  const determinism = determinismOf(own, fast);
  const inputs = shared.inputList(memoInputs(own, fast));
  const toggle = compiledToggle(feature.name, feature.impressionData === true, shared.outcomes, {
    feature,
    customCode: own.some(
      (f) => Array.isArray(f.strategies) && f.strategies.some((s) => !fast.isBuiltInStrategy(s.name)),
    ),
    determinism,
    inputs,
    ...shared.group(inputs, determinism),
  });
  if (isConstant(feature, fast))
    toggle.constant = outcomeOf(toggle, feature.enabled === true ? ENABLED_ANSWER : DISABLED_ANSWER);
  else toggle.engine = engineOf(feature, fast, shared.checks);
  related.push(...own);
  return toggle;
}

type Compiled = { -readonly [K in keyof CompiledToggle]: CompiledToggle[K] };

/**
 * The engine's evaluation of a toggle, or undefined when the engine does not compile it (the SDK
 * evaluates it, as before the engine existed): what it does not know is never guessed at.
 */
function engineOf(
  feature: FeatureInterface,
  fast: FastEvaluation,
  checks: Checks,
): ToggleEvaluation | undefined {
  try {
    return compileFeature(feature, fast, checks);
  } catch {
    return undefined;
  }
}

/**
 * Every compiled toggle is made here, with its fields in one order: the hot path reads them from
 * objects of a single shape.
 */
function compiledToggle(
  name: string,
  impressionData: boolean,
  interned: OutcomeTable,
  fields: Partial<
    Pick<
      CompiledToggle,
      'feature' | 'customCode' | 'determinism' | 'inputs' | 'group' | 'slot' | 'quarantined' | 'uncompiled'
    >
  >,
): Compiled {
  return {
    name,
    index: -1,
    feature: fields.feature,
    impressionData,
    constant: undefined,
    quarantined: fields.quarantined ?? false,
    uncompiled: fields.uncompiled ?? false,
    engine: undefined,
    customCode: fields.customCode ?? false,
    determinism: fields.determinism ?? ALWAYS_DETERMINISTIC,
    outcomes: new Map(),
    inputs: fields.inputs,
    group: fields.group ?? -1,
    slot: fields.slot ?? -1,
    interned,
    bySlot: [],
    off: undefined,
    on: undefined,
    offId: -1,
    onId: -1,
  };
}

/**
 * Compiles one definitions revision. A quarantined toggle is answered disabled without evaluating;
 * an irregular one (types this code does not rely on) and one that cannot be compiled are
 * evaluated by the SDK alone on every request: none of them takes the other toggles, or the
 * process, down.
 */
export function compilePlan(
  revision: number,
  features: FeatureRepository,
  fast: FastEvaluation,
  definitions: () => unknown,
  onCompileError: (name: string, err: unknown) => void,
): Plan {
  const shared = new PlanShared();
  // The compiled toggles and their parents (of any project): the clock matters at their dates.
  const regular = new Set<FeatureInterface>();
  const compileOne = (feature: FeatureInterface): Compiled => {
    if (features.fault(feature.name)) return quarantined(feature, shared.outcomes);
    if (features.isIrregular(feature.name)) return uncompiled(feature, shared.outcomes);
    try {
      const related: FeatureInterface[] = [];
      const toggle = compileToggle(feature, fast, shared, related);
      for (const f of related) regular.add(f);
      return toggle;
    } catch (err) {
      onCompileError(feature.name, err);
      return uncompiled(feature, shared.outcomes);
    }
  };
  const toggles = features.toggles().map((feature, index) => {
    const toggle = compileOne(feature);
    toggle.index = index;
    return toggle;
  });
  return {
    revision,
    digest: definitionsDigest(definitions()),
    toggles,
    byName: new Map(toggles.map((t) => [t.name, t])),
    determinism: combine(toggles.map((t) => t.determinism)),
    dateBoundaries: dateBoundaries([...regular], fast),
    outcomes: shared.outcomes.list,
    table: shared.outcomes,
    steps: new ToggleSteps(toggles),
    groups: shared.groups,
    checks: shared.checks.size,
    sdkEvaluated: toggles.filter((t) => !t.constant && !t.engine).map((t) => t.name),
  };
}

/** A quarantined toggle: disabled with the fallback variant for every context, never counted. */
function quarantined(feature: FeatureInterface, interned: OutcomeTable): Compiled {
  const impressionData = feature.impressionData === true;
  const toggle = compiledToggle(feature.name, impressionData, interned, { quarantined: true });
  toggle.constant = {
    name: feature.name,
    id: QUARANTINED,
    enabled: false,
    variant: FALLBACK.name,
    entry: toggleEntry(toEvaluatedToggle(feature.name, impressionData, FALLBACK)),
  };
  return toggle;
}

/** A toggle evaluated by the SDK on every request, never remembered. */
function uncompiled(feature: FeatureInterface, interned: OutcomeTable): Compiled {
  return compiledToggle(String(feature.name), feature.impressionData === true, interned, {
    uncompiled: true,
    customCode: true,
    determinism: {
      never: true,
      chance: [],
      currentTime: false,
      userOrSession: false,
      seed: false,
      fields: [],
    },
  });
}
