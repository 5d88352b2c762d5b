import { normalizedAfterState, type PreparedKey } from '../../upstream/murmur-hash';
import type { CompiledToggle } from '../compiled-toggle';
import type { Check } from './constraints';
import type { RequestScope } from './scope';
import {
  ALWAYS,
  ROLLOUT_GROUP,
  SHARED,
  STICKY_DEFAULT,
  STICKY_FIELD,
  type CompiledStrategy,
} from './strategies';
import { singleStrategyOf } from './toggle';
import { answerSlot, type VariantChoice } from './variants';

/** A toggle `FlatToggles` does not lay out: the compiled toggle's object evaluates it. */
const NONE = 0;
const ON = 1;
const CHECKED = 2;
const ROLLOUT = 3;

/** What `FlatToggles.outcome` answers when the toggle's object must evaluate it this time. */
export const NOT_FLAT = -1;

/**
 * A toggle's record in `FlatToggles.records`: `STRIDE` 32-bit numbers from `STRIDE * i`, read in
 * one place (a toggle's numbers share a cache line or two instead of one per array).
 */
const KIND = 0;
/** Its constraint checks: ids (and functions) in `[CHECKS_FROM, CHECKS_TO)` of `checkIds`/`checks`. */
const CHECKS_FROM = 1;
const CHECKS_TO = 2;
/** CHECKED: the id of the strategy's shared check. */
const SHARED_ID = 3;
/** ROLLOUT: sticky on the default (userId, sessionId) or a field, with the field's number. */
const STICKY = 4;
const FIELD_INDEX = 5;
/** ROLLOUT: the hash state after `groupId:` (h1, tail, tailLength, length + 1: 0 for no prefix). */
const PREFIX = 6;
/** The variant choice: its first variant in `weights`/`slots`/`variantIds` (-1 without), its count. */
const CHOICE_FROM = 10;
const CHOICE_COUNT = 11;
/** The choice's seed: 1 for a field (with its number in SEED_INDEX), 0 for the SDK's default. */
const SEED_FIELD = 12;
const SEED_INDEX = 13;
/** The choice's hash state after its `groupId:` (h1, tail, tailLength, length). */
const CHOICE_PREFIX = 14;
/** The ids of its interned outcomes, disabled and enabled without a variant (`NOT_FLAT` until learnt). */
const OFF_ID = 18;
const ON_ID = 19;
const STRIDE = 20;

/**
 * The toggles most answers are made of, laid out flat for the answer loop: an enabled toggle with
 * one strategy and no dependencies whose strategy is `default`, a check of the context alone
 * (`userWithId`, `remoteAddress`) or a `flexibleRollout` on a groupId (sticky on the default or
 * a field), after constraints and segments that are shared checks, with at most one variant choice
 * (the strategy's or the toggle's) without overrides. What such a toggle's compiled object reads —
 * kind, check ids, the rollout's and the choice's hash prefixes, seeds, and the ids of its
 * interned outcomes — is one record of numbers by toggle index (percentages and weights beside
 * it); the request's sticky values and seeds are prepared for hashing once (`RequestScope`). At
 * 2,000 toggles a new user's answer evaluates ~750; each reads its record, not ~15 arrays.
 *
 * It answers exactly what the compiled object answers (`toggle.ts`, equal to `unleash-client`):
 * the sticky value and the variant seed follow the same rules (`defaultSticky`, `variantSeedOf`,
 * which `rolloutSticky` and `variantSeed` use too, prepared by the scope), and whenever the answer depends on chance (no sticky value, no seed) or
 * an outcome is not interned yet, it answers `NOT_FLAT` and the object evaluates (and interns);
 * `learn` then copies the toggle's outcome ids.
 */
export class FlatToggles {
  private readonly records: Int32Array;
  /** Per toggle: the rollout's percentage, the choice's total weight. */
  private readonly percentage: Float64Array;
  private readonly totalWeight: Float64Array;
  /** Constraint checks of every toggle, by a record's `[CHECKS_FROM, CHECKS_TO)`. */
  private readonly checkIds: Int32Array;
  private readonly checks: Check[] = [];
  /** CHECKED: the shared check of the strategy, by toggle. */
  private readonly sharedChecks: (Check | undefined)[];
  /** The rollout's sticky field and the choice's seed field, by toggle ('' without). */
  private readonly fields: string[];
  private readonly seedFields: string[];
  /** Per variant: weight, answer slot, and the id of its interned outcome (`NOT_FLAT` until learnt). */
  private readonly weights: Float64Array;
  private readonly slots: Int32Array;
  private readonly variantIds: Int32Array;

  constructor(toggles: readonly CompiledToggle[]) {
    const n = toggles.length;
    const records = new Int32Array(STRIDE * n);
    this.records = records;
    this.percentage = new Float64Array(n);
    this.totalWeight = new Float64Array(n);
    this.sharedChecks = new Array<Check | undefined>(n).fill(undefined);
    this.fields = new Array<string>(n).fill('');
    this.seedFields = new Array<string>(n).fill('');
    const ids: number[] = [];
    const weights: number[] = [];
    const slots: number[] = [];
    for (let i = 0; i < n; i++) {
      const at = STRIDE * i;
      records[at + CHOICE_FROM] = -1;
      records[at + OFF_ID] = NOT_FLAT;
      records[at + ON_ID] = NOT_FLAT;
      const toggle = toggles[i];
      const single = toggle.engine === undefined ? undefined : singleStrategyOf(toggle.engine);
      if (single === undefined || toggle.constant !== undefined || toggle.group >= 0) continue;
      const { strategy, choice: own } = single;
      const kind = kindOf(strategy);
      // one variant split at most, and one that chooses (a strategy's that chooses nothing would hand
      // over to the toggle's)
      if (kind === NONE || (strategy.choice !== undefined && own !== undefined)) continue;
      const defined = strategy.choice ?? own;
      const choice = weighted(defined);
      if (defined !== undefined && choice === undefined) continue;
      records[at + KIND] = kind;
      records[at + CHECKS_FROM] = ids.length;
      for (let c = 0; c < strategy.checkIds.length; c++) {
        ids.push(strategy.checkIds[c]);
        this.checks.push(strategy.checks[c]);
      }
      records[at + CHECKS_TO] = ids.length;
      records[at + SHARED_ID] = strategy.sharedId;
      this.sharedChecks[i] = strategy.sharedCheck;
      this.percentage[i] = strategy.percentage;
      records[at + STICKY] = strategy.sticky;
      records[at + FIELD_INDEX] = strategy.fieldIndex;
      this.fields[i] = strategy.field;
      if (strategy.prefix !== undefined) {
        const { h1, tail, tailLength, length } = strategy.prefix;
        records.set([h1, tail, tailLength, length + 1], at + PREFIX);
      }
      if (choice?.prefix !== undefined) {
        records[at + CHOICE_FROM] = weights.length;
        records[at + CHOICE_COUNT] = choice.variants.length;
        this.totalWeight[i] = choice.totalWeight;
        records[at + SEED_FIELD] = choice.field === undefined ? 0 : 1;
        records[at + SEED_INDEX] = choice.fieldIndex;
        this.seedFields[i] = choice.field ?? '';
        const { h1, tail, tailLength, length } = choice.prefix;
        records.set([h1, tail, tailLength, length], at + CHOICE_PREFIX);
        for (const variant of choice.variants) {
          weights.push(variant.weight);
          slots.push(answerSlot(variant.answer));
        }
      }
    }
    this.checkIds = Int32Array.from(ids);
    this.weights = Float64Array.from(weights);
    this.slots = Int32Array.from(slots);
    this.variantIds = new Int32Array(weights.length).fill(NOT_FLAT);
    for (let i = 0; i < n; i++) if (records[STRIDE * i + KIND] !== NONE) this.learn(toggles[i]);
  }

  /** True when toggle `i` is laid out here. */
  has(i: number): boolean {
    return this.records[STRIDE * i + KIND] !== NONE;
  }

  /**
   * The interned outcome id of toggle `i` for the scope's request, as its compiled object would
   * answer it; `NOT_FLAT` when the object must evaluate it this time (chance decides, or the
   * outcome is not interned yet).
   */
  outcome(i: number, scope: RequestScope): number {
    const records = this.records;
    const at = STRIDE * i;
    const end = records[at + CHECKS_TO];
    for (let c = records[at + CHECKS_FROM]; c < end; c++)
      if (!scope.shared(this.checkIds[c], this.checks[c])) return records[at + OFF_ID];
    const kind = records[at + KIND];
    if (kind === CHECKED) {
      if (!scope.shared(records[at + SHARED_ID], this.sharedChecks[i] as Check)) return records[at + OFF_ID];
    } else if (kind === ROLLOUT) {
      let key: PreparedKey | null;
      if (records[at + STICKY] === STICKY_FIELD) {
        key = scope.fieldKey(records[at + FIELD_INDEX], this.fields[i]);
      } else {
        key = scope.stickyKey();
        // no sticky value: the SDK throws its die, chance decides
        if (key === null) return NOT_FLAT;
      }
      // a prefix's stored length is one more than its own: 0 means no prefix (percentage not above 0)
      const length = records[at + PREFIX + 3] - 1;
      if (key === null || length < 0) return records[at + OFF_ID];
      const hash = normalizedAfterState(
        records[at + PREFIX],
        records[at + PREFIX + 1],
        records[at + PREFIX + 2],
        length,
        key,
        100,
      );
      if (!(hash <= this.percentage[i])) return records[at + OFF_ID];
    }
    const start = records[at + CHOICE_FROM];
    if (start < 0) return records[at + ON_ID];
    const seed =
      records[at + SEED_FIELD] === 1
        ? scope.fieldKey(records[at + SEED_INDEX], this.seedFields[i])
        : scope.seedKey();
    if (seed === null) return NOT_FLAT;
    const target = normalizedAfterState(
      records[at + CHOICE_PREFIX],
      records[at + CHOICE_PREFIX + 1],
      records[at + CHOICE_PREFIX + 2],
      records[at + CHOICE_PREFIX + 3],
      seed,
      this.totalWeight[i],
    );
    const weights = this.weights;
    const end2 = start + records[at + CHOICE_COUNT];
    let counter = 0;
    for (let v = start; v < end2; v++) {
      const weight = weights[v];
      if (weight === 0) continue;
      counter += weight;
      if (counter < target) continue;
      return this.variantIds[v];
    }
    return records[at + ON_ID];
  }

  /** Copies the ids of a toggle's interned outcomes, after its object evaluated it (and may have interned one). */
  learn(toggle: CompiledToggle): void {
    const at = STRIDE * toggle.index;
    const records = this.records;
    if (records[at + KIND] === NONE) return;
    records[at + OFF_ID] = toggle.offId;
    records[at + ON_ID] = toggle.onId;
    const start = records[at + CHOICE_FROM];
    if (start < 0) return;
    const end = start + records[at + CHOICE_COUNT];
    for (let v = start; v < end; v++) this.variantIds[v] = toggle.bySlot[this.slots[v]]?.id ?? NOT_FLAT;
  }
}

function kindOf(strategy: CompiledStrategy): number {
  switch (strategy.kind) {
    case ALWAYS:
      return ON;
    case SHARED:
      return strategy.sharedCheck === undefined ? NONE : CHECKED;
    case ROLLOUT_GROUP:
      return strategy.sticky === STICKY_DEFAULT || strategy.sticky === STICKY_FIELD ? ROLLOUT : NONE;
    default:
      return NONE;
  }
}

/** A choice that chooses (weights that add up to something, no overrides); undefined otherwise. */
function weighted(choice: VariantChoice | undefined): VariantChoice | undefined {
  return choice !== undefined &&
    choice.weighted &&
    choice.prefix !== undefined &&
    choice.withOverrides.length === 0
    ? choice
    : undefined;
}
