import type { Context } from 'unleash-client';
import type { StrategyTransportInterface } from '../upstream/sdk/types';
import { ownCopy } from '../context/build-context';
import type { FastEvaluation } from '../upstream/feature-repository';
import { NOT_FLAT } from './compiled/flat';
import { clockWindow } from './determinism';
import { MemoKeys } from './memo-keys';
import type { CompiledToggle } from './compiled-toggle';
import { evaluatedOf, outcomeOf, type Outcome } from './outcomes';
import type { Plan } from './plan';
import { FAILED, type AnswerShape, type ShapeEntries } from './requests';
import type { Revision } from './revision';
import { disabledToggle, toggleEntry } from './toggle-json';

/**
 * One request's walk over one revision: its context and clock window, its memo keys, the shape it
 * writes (`/proxy`'s entries, or an `AnswerShape`'s), and what it gathers besides its entries (their
 * length, with `collect` the outcomes it counted, and whether the answer may be kept). Every toggle
 * of the request is evaluated (or remembered) through it, and counted in the revision's usage.
 */
export class AnswerPass {
  readonly keys: MemoKeys;
  /** The shape's entries of the revision, when the request writes a shape. */
  readonly shaped: ShapeEntries | undefined;
  /** The entries' total length. */
  bytes = 0;
  /** With `collect`, the outcomes counted one by one (to keep the answer with). */
  readonly counted: Outcome[] = [];
  /** False once a toggle failed or was written by its shape alone: such an answer is not kept. */
  cacheable = true;

  constructor(
    readonly fast: FastEvaluation,
    readonly revision: Revision,
    readonly enhanced: Context,
    readonly window: string | undefined,
    memoKeyMaxLength: number,
    /** Collect what is counted, to keep the answer with it. */
    readonly collect: boolean,
    /** The context passed every toggle's determinism (`MemoKeys`). */
    deterministic: boolean,
    readonly shape?: AnswerShape,
  ) {
    this.keys = new MemoKeys(
      revision.plan.groups,
      enhanced,
      window,
      memoKeyMaxLength,
      deterministic,
      revision.lastKeys,
    );
    this.shaped = shape?.entries(revision.plan);
    revision.scope.begin(enhanced);
  }

  /** Adds an entry to the answer's list. */
  push(entries: Buffer[], entry: Buffer): void {
    entries.push(entry);
    this.bytes += entry.length;
  }

  /** True when the shape writes toggle `i` with the strategy that enabled it. */
  isDecided(i: number): boolean {
    return this.shaped !== undefined && this.shaped.decided[i] === 1;
  }

  /**
   * Toggle `i` evaluated (or remembered): from its flat layout when it has one that answers
   * (`compiled/flat.ts`: counted as `toggle` counts), else by `toggle`, whose outcome ids the layout
   * then learns; what it gave is noted (counted, or not cacheable when it failed).
   */
  at(i: number): number | Outcome {
    const { flat, plan } = this.revision;
    const laidOut = flat.has(i);
    if (laidOut) {
      let id = NOT_FLAT;
      try {
        id = flat.outcome(i, this.revision.scope);
      } catch {
        // the toggle's object evaluates it again, and answers the failure as it does
        id = NOT_FLAT;
      }
      if (id >= 0) {
        this.revision.usage.countId(id);
        if (this.collect) this.counted.push(plan.table.list[id]);
        return id;
      }
    }
    const result = this.toggle(plan.toggles[i]);
    if (laidOut) flat.learn(plan.toggles[i]);
    if (typeof result === 'number') {
      if (this.collect) this.counted.push(plan.table.list[result]);
    } else if (result.id === FAILED) this.cacheable = false;
    else if (this.collect) this.counted.push(result);
    return result;
  }

  /**
   * One toggle: its remembered result for the values of its input fields when it has one, else one
   * evaluation (the engine's, or the SDK's), counted; as the interned outcome's id, or the outcome
   * when it is not interned (`evaluatedOf`). A strategy that throws answers the toggle disabled,
   * not counted (as the SDK does; its outcome's id is `FAILED`), and never fails the other toggles
   * of the request. A toggle that reads the clock (no `currentTime` in the context) is remembered
   * per window of the clock among the dates. Toggles with the same input fields share one key per
   * request (`keys`).
   */
  toggle(toggle: CompiledToggle): number | Outcome {
    const { revision, keys, enhanced, window } = this;
    const key = toggle.group < 0 ? undefined : keys.ofGroup(toggle.group);
    if (key !== undefined) {
      const id = keys.rowOf(toggle.group, key)?.[toggle.slot] ?? -1;
      if (id >= 0) {
        revision.usage.countId(id);
        return id;
      }
    }
    let evaluated: number | Outcome;
    try {
      evaluated = evaluatedOf(
        toggle,
        toggle.engine
          ? toggle.engine.evaluate(revision.scope)
          : toggle.feature === undefined
            ? this.fast.resolve(toggle.name, toggle.customCode ? ownCopy(enhanced) : enhanced)
            : this.fast.resolveFeature(toggle.feature, toggle.customCode ? ownCopy(enhanced) : enhanced),
      );
    } catch (err) {
      this.fast.failed(toggle.name, err);
      return failedOutcome(toggle);
    }
    if (typeof evaluated !== 'number') {
      // not interned: counted as itself, never remembered
      revision.usage.count(evaluated);
      return evaluated;
    }
    revision.usage.countId(evaluated);
    // kept only when no date passed while evaluating
    if (key === undefined) return evaluated;
    const clocked = toggle.determinism.currentTime && window !== undefined;
    if (!clocked || clockWindow(revision.plan.dateBoundaries, Date.now()) === window)
      revision.remember(toggle, key, evaluated, keys);
    return evaluated;
  }

  /**
   * One evaluation of a toggle (the engine's or the SDK's) that also tells which strategy enabled
   * it, never from the memo; counted unless it threw (then disabled, `FAILED`).
   */
  decide(toggle: CompiledToggle): {
    readonly outcome: Outcome;
    readonly decided: StrategyTransportInterface | undefined;
  } {
    let outcome: Outcome;
    let decided: StrategyTransportInterface | undefined;
    try {
      const engine = toggle.engine;
      const result = engine
        ? engine.evaluate(this.revision.scope)
        : this.fast.resolve(toggle.name, toggle.customCode ? ownCopy(this.enhanced) : this.enhanced);
      decided = !result.feature_enabled
        ? undefined
        : engine
          ? engine.decided
          : this.fast.decidingStrategy(toggle.name);
      outcome = outcomeOf(toggle, result);
    } catch (err) {
      this.fast.failed(toggle.name, err);
      return { outcome: failedOutcome(toggle), decided: undefined };
    }
    this.revision.usage.count(outcome);
    return { outcome, decided };
  }

  /**
   * A toggle the shape writes with the strategy that enabled it (`AnswerShape.entries`' `decided`):
   * evaluated with it (never from the memo), or written by the shape alone when not compiled.
   */
  decidedEntry(toggle: CompiledToggle, shape: AnswerShape): Buffer {
    if (toggle.uncompiled) {
      this.cacheable = false;
      return shape.uncompiled(toggle);
    }
    const decision = this.decide(toggle);
    if (decision.outcome.id === FAILED) this.cacheable = false;
    else if (this.collect) this.counted.push(decision.outcome);
    return shape.entry(toggle, decision.outcome, decision.decided);
  }

  /**
   * Adds toggle `i`'s entry for its outcome (the interned outcome `id`, or `outcome` when not
   * interned) to `entries`: with a shape, the shape's entry (read by id when made before); else
   * `/proxy`'s, unless only enabled toggles are listed and it is disabled.
   */
  put(entries: Buffer[], i: number, id: number, outcome: Outcome | undefined, onlyEnabled: boolean): void {
    const plan = this.revision.plan;
    const table = plan.table;
    const shape = this.shape;
    if (shape !== undefined) {
      let entry = outcome === undefined ? this.shaped?.byId[id] : undefined;
      entry ??= shape.entry(plan.toggles[i], outcome ?? table.list[id], undefined);
      entries.push(entry);
      this.bytes += entry.length;
    } else if (outcome === undefined) {
      if (!onlyEnabled || table.enabled[id] === 1) {
        entries.push(table.entries[id]);
        this.bytes += table.sizes[id];
      }
    } else if (!onlyEnabled || outcome.enabled) {
      entries.push(outcome.entry);
      this.bytes += outcome.entry.length;
    }
  }
}

/** An evaluation's result (`AnswerPass.toggle`) as an outcome object. */
export function asOutcome(plan: Plan, evaluated: number | Outcome): Outcome {
  return typeof evaluated === 'number' ? plan.outcomes[evaluated] : evaluated;
}

/** A toggle whose evaluation threw: disabled with the fallback variant, never counted. */
function failedOutcome(toggle: CompiledToggle): Outcome {
  const failed = disabledToggle(toggle.name, toggle.impressionData);
  return {
    name: toggle.name,
    id: FAILED,
    enabled: failed.enabled,
    variant: failed.variant.name,
    entry: toggleEntry(failed),
  };
}
