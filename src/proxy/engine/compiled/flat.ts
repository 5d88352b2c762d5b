import { normalizedAfterState } from '../../upstream/murmur-hash';
import type { CompiledToggle } from '../compiled-toggle';
import type { Check } from './constraints';
import type { RequestScope } from './scope';
import {
  ALWAYS,
  ROLLOUT_GROUP,
  rolloutSticky,
  SHARED,
  STICKY_DEFAULT,
  STICKY_FIELD,
  type CompiledStrategy,
} from './strategies';
import { singleStrategyOf } from './toggle';
import { answerSlot, variantSeed, type VariantChoice } from './variants';

/** A toggle `FlatToggles` does not lay out: the compiled toggle's object evaluates it. */
const NONE = 0;
const ON = 1;
const CHECKED = 2;
const ROLLOUT = 3;

/** What `FlatToggles.outcome` answers when the toggle's object must evaluate it this time. */
export const NOT_FLAT = -1;

/** The hash prefix's four numbers (`HashPrefix`) per toggle or choice. */
const PREFIX = 4;

/**
 * The toggles most answers are made of, laid out flat for the answer loop: an enabled toggle with
 * one strategy and no dependencies whose strategy is `default`, a check of the context alone
 * (`userWithId`, `remoteAddress`) or a `flexibleRollout` on a groupId (sticky on the default or
 * a field), after constraints and segments that are shared checks, with at most one variant choice
 * (the strategy's or the toggle's) without overrides. What such a toggle's compiled object reads —
 * kind, check ids, percentage, the rollout's and the choice's hash prefixes, weights, and the ids
 * of its interned outcomes — is in typed arrays by toggle index. At 2,000 toggles a new user's
 * answer reads the objects of ~750 of them; each is a cache miss on a busy server, where these
 * arrays are read in index order.
 *
 * It answers exactly what the compiled object answers (`toggle.ts`, equal to `unleash-client`):
 * the same helpers read the sticky value and the variant seed, and whenever the answer depends on
 * chance (no sticky value, no seed) or an outcome is not interned yet, it answers `NOT_FLAT` and
 * the object evaluates (and interns); `learn` then copies the toggle's outcome ids.
 */
export class FlatToggles {
  private readonly kind: Uint8Array;
  private readonly offId: Int32Array;
  private readonly onId: Int32Array;
  /** Constraint checks: ids and functions of toggle i in `[checkStart[i], checkStart[i + 1])`. */
  private readonly checkStart: Int32Array;
  private readonly checkIds: Int32Array;
  private readonly checks: Check[] = [];
  /** CHECKED: the shared check of the strategy. */
  private readonly sharedIds: Int32Array;
  private readonly sharedChecks: (Check | undefined)[];
  /** ROLLOUT: percentage, sticky source with its field, and the prefix (h1, tail, tailLength, length). */
  private readonly percentage: Float64Array;
  private readonly sticky: Uint8Array;
  private readonly fieldIndex: Int32Array;
  private readonly fields: string[];
  private readonly prefix: Int32Array;
  /** The variant choice: its first variant in the variant arrays (-1 without), its count, total weight, seed field and prefix. */
  private readonly choiceStart: Int32Array;
  private readonly choiceCount: Int32Array;
  private readonly totalWeight: Float64Array;
  private readonly seedField: (string | undefined)[];
  private readonly seedIndex: Int32Array;
  private readonly choicePrefix: Int32Array;
  /** Per variant: weight, answer slot, and the id of its interned outcome (-1 until learnt). */
  private readonly weights: number[] = [];
  private readonly slots: number[] = [];
  private readonly variantIds: Int32Array;

  constructor(toggles: readonly CompiledToggle[]) {
    const n = toggles.length;
    this.kind = new Uint8Array(n);
    this.offId = new Int32Array(n).fill(NOT_FLAT);
    this.onId = new Int32Array(n).fill(NOT_FLAT);
    this.checkStart = new Int32Array(n + 1);
    this.sharedIds = new Int32Array(n);
    this.sharedChecks = new Array<Check | undefined>(n).fill(undefined);
    this.percentage = new Float64Array(n);
    this.sticky = new Uint8Array(n);
    this.fieldIndex = new Int32Array(n);
    this.fields = new Array<string>(n).fill('');
    this.prefix = new Int32Array(PREFIX * n);
    this.choiceStart = new Int32Array(n).fill(-1);
    this.choiceCount = new Int32Array(n);
    this.totalWeight = new Float64Array(n);
    this.seedField = new Array<string | undefined>(n).fill(undefined);
    this.seedIndex = new Int32Array(n);
    this.choicePrefix = new Int32Array(PREFIX * n);
    const ids: number[] = [];
    for (let i = 0; i < n; i++) {
      this.checkStart[i] = ids.length;
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
      this.kind[i] = kind;
      for (let c = 0; c < strategy.checkIds.length; c++) {
        ids.push(strategy.checkIds[c]);
        this.checks.push(strategy.checks[c]);
      }
      this.sharedIds[i] = strategy.sharedId;
      this.sharedChecks[i] = strategy.sharedCheck;
      this.percentage[i] = strategy.percentage;
      this.sticky[i] = strategy.sticky;
      this.fieldIndex[i] = strategy.fieldIndex;
      this.fields[i] = strategy.field;
      if (strategy.prefix !== undefined) {
        const { h1, tail, tailLength, length } = strategy.prefix;
        this.prefix.set([h1, tail, tailLength, length + 1], PREFIX * i);
      }
      if (choice?.prefix !== undefined) {
        this.choiceStart[i] = this.weights.length;
        this.choiceCount[i] = choice.variants.length;
        this.totalWeight[i] = choice.totalWeight;
        this.seedField[i] = choice.field;
        this.seedIndex[i] = choice.fieldIndex;
        const { h1, tail, tailLength, length } = choice.prefix;
        this.choicePrefix.set([h1, tail, tailLength, length], PREFIX * i);
        for (const variant of choice.variants) {
          this.weights.push(variant.weight);
          this.slots.push(answerSlot(variant.answer));
        }
      }
    }
    this.checkStart[n] = ids.length;
    this.checkIds = Int32Array.from(ids);
    this.variantIds = new Int32Array(this.weights.length).fill(NOT_FLAT);
    for (let i = 0; i < n; i++) if (this.kind[i] !== NONE) this.learn(toggles[i]);
  }

  /** True when toggle `i` is laid out here. */
  has(i: number): boolean {
    return this.kind[i] !== NONE;
  }

  /**
   * The interned outcome id of toggle `i` for the scope's request, as its compiled object would
   * answer it; `NOT_FLAT` when the object must evaluate it this time (chance decides, or the
   * outcome is not interned yet).
   */
  outcome(i: number, scope: RequestScope): number {
    const end = this.checkStart[i + 1];
    for (let c = this.checkStart[i]; c < end; c++)
      if (!scope.shared(this.checkIds[c], this.checks[c])) return this.offId[i];
    const kind = this.kind[i];
    if (kind === CHECKED) {
      if (!scope.shared(this.sharedIds[i], this.sharedChecks[i] as Check)) return this.offId[i];
    } else if (kind === ROLLOUT) {
      const sticky = this.sticky[i];
      const value = rolloutSticky(sticky, this.fieldIndex[i], this.fields[i], scope);
      // the SDK throws its die: chance decides
      if (value === undefined && sticky !== STICKY_FIELD) return NOT_FLAT;
      const at = PREFIX * i;
      // a prefix's stored length is one more than its own: 0 means no prefix (percentage not above 0)
      const length = this.prefix[at + 3] - 1;
      if (!value || length < 0) return this.offId[i];
      const hash = normalizedAfterState(
        this.prefix[at],
        this.prefix[at + 1],
        this.prefix[at + 2],
        length,
        scope.key(`${value as string}`),
        100,
      );
      if (!(hash <= this.percentage[i])) return this.offId[i];
    }
    const start = this.choiceStart[i];
    if (start < 0) return this.onId[i];
    const seed = variantSeed(this.seedField[i], this.seedIndex[i], scope);
    if (seed === undefined) return NOT_FLAT;
    const at = PREFIX * i;
    const target = normalizedAfterState(
      this.choicePrefix[at],
      this.choicePrefix[at + 1],
      this.choicePrefix[at + 2],
      this.choicePrefix[at + 3],
      scope.key(seed),
      this.totalWeight[i],
    );
    const end2 = start + this.choiceCount[i];
    let counter = 0;
    for (let v = start; v < end2; v++) {
      const weight = this.weights[v];
      if (weight === 0) continue;
      counter += weight;
      if (counter < target) continue;
      return this.variantIds[v];
    }
    return this.onId[i];
  }

  /** Copies the ids of a toggle's interned outcomes, after its object evaluated it (and may have interned one). */
  learn(toggle: CompiledToggle): void {
    const i = toggle.index;
    if (this.kind[i] === NONE) return;
    this.offId[i] = toggle.offId;
    this.onId[i] = toggle.onId;
    const start = this.choiceStart[i];
    if (start < 0) return;
    for (let v = start; v < start + this.choiceCount[i]; v++)
      this.variantIds[v] = toggle.bySlot[this.slots[v]]?.id ?? NOT_FLAT;
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
