import type { FeatureInterface } from '../upstream/sdk/types';
import type { SdkVariant } from '../upstream/feature-repository';
import { ALWAYS_DETERMINISTIC, type Determinism } from './determinism';
import type { ToggleEvaluation } from './compiled/toggle';
import type { OutcomeTable } from './outcome-table';
import { QUARANTINED, type KnownOutcome, type Outcome } from './outcomes';
import { toEvaluatedToggle, toggleEntry } from './toggle-json';

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

/** A compiled toggle while it is being made (`plan.ts` sets its index, `compile-toggle.ts` its result). */
export type ToggleInMaking = { -readonly [K in keyof CompiledToggle]: CompiledToggle[K] };

/** What a compiled toggle is made of; the fields left out take their neutral value. */
export type ToggleFields = Pick<CompiledToggle, 'name' | 'impressionData' | 'interned'> &
  Partial<
    Pick<
      CompiledToggle,
      'feature' | 'customCode' | 'determinism' | 'inputs' | 'group' | 'slot' | 'quarantined' | 'uncompiled'
    >
  >;

/**
 * Every compiled toggle is made here, with its fields in one order: the hot path reads them from
 * objects of a single shape.
 */
export function compiledToggle(fields: ToggleFields): ToggleInMaking {
  return {
    name: fields.name,
    index: -1,
    feature: fields.feature,
    impressionData: fields.impressionData,
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
    interned: fields.interned,
    bySlot: [],
    off: undefined,
    on: undefined,
    offId: -1,
    onId: -1,
  };
}

const FALLBACK: SdkVariant = { name: 'disabled', enabled: false };

/** A quarantined toggle: disabled with the fallback variant for every context, never counted. */
export function quarantinedToggle(feature: FeatureInterface, interned: OutcomeTable): ToggleInMaking {
  const impressionData = feature.impressionData === true;
  const toggle = compiledToggle({ name: feature.name, impressionData, interned, quarantined: true });
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
export function uncompiledToggle(feature: FeatureInterface, interned: OutcomeTable): ToggleInMaking {
  return compiledToggle({
    name: String(feature.name),
    impressionData: feature.impressionData === true,
    interned,
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
