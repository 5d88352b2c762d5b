import type { Context } from 'unleash-client';
import { weakEtag } from '../../common/http/etag';
import type {
  EvaluatedToggle,
  FastEvaluation,
  FeatureRepository,
  UsagePlan,
} from '../upstream/feature-repository';
import { contextKey } from './context-key';
import { compileToggle, memoKey, outcomeOf, type CompiledToggle, type Outcome } from './plan';
import { ResponseCache, type Sized } from './response-cache';

/** Which toggles a request asks for. */
export type Selection = { kind: 'enabled' } | { kind: 'all' } | { kind: 'named'; names: readonly string[] };

/** A serialised toggle list and its validator. */
export interface Answer {
  body: string | Buffer;
  etag: string;
}

export interface EvaluatorOptions {
  /** Upper bound of the memory held by cached answers of one definitions revision. */
  cacheMaxBytes?: number;
  cacheMaxEntries?: number;
  /** Upper bound of remembered per-toggle results, all toggles together. */
  memoMaxEntries?: number;
}

/**
 * A cached answer for one selection and context. Toggles whose result is fixed for that context
 * are kept as pre-joined fragments with their usage counts; the others (`parts` entries that are
 * toggles) are evaluated on every request. Valid while the clock is inside `(validFrom, validUntil)`.
 */
interface CachedAnswer extends Sized {
  readonly validFrom: number;
  readonly validUntil: number;
  readonly usage: UsagePlan;
  readonly onlyEnabled: boolean;
  /** The whole answer when every toggle is fixed: served, or 304'd, without evaluating anything. */
  readonly complete: Answer | undefined;
  readonly parts: readonly (string | CompiledToggle)[];
}

interface Plan {
  readonly revision: number;
  readonly toggles: readonly CompiledToggle[];
  readonly byName: Map<string, CompiledToggle>;
  /** The usage of every context-independent toggle, counted once per request listing all toggles. */
  readonly constantUsage: UsagePlan;
  /** True when only the SDK's built-in strategies run: none of them changes the context. */
  readonly builtInOnly: boolean;
  readonly cache: ResponseCache<CachedAnswer>;
  memoEntries: number;
}

/** An evaluated toggle, and whether (and until when) the same context gets the same result. */
interface Tracked {
  readonly outcome: Outcome;
  readonly fixed: boolean;
  readonly validFrom: number;
  readonly validUntil: number;
}

/** A context made ready for evaluation: enhanced by the SDK's static context, and its cache keys. */
interface Prepared {
  readonly enhanced: Context;
  /** The canonical context; undefined when the context cannot be cached (a non-string value). */
  readonly key: string | undefined;
  readonly cacheKeys: { enabled?: string; all?: string };
}

const FALLBACK = Object.freeze({ name: 'disabled', enabled: false });
const ALWAYS = { validFrom: -Infinity, validUntil: Infinity } as const;

function wrap(fragments: readonly string[]): string {
  return `{"toggles":[${fragments.join(',')}]}`;
}

const timeless = (w: { validFrom: number; validUntil: number }) =>
  w.validFrom === -Infinity && w.validUntil === Infinity;

function inWindow(w: { validFrom: number; validUntil: number }): boolean {
  if (timeless(w)) return true;
  const now = Date.now();
  return now > w.validFrom && now < w.validUntil;
}

/** Unknown names: what the SDK answers for a name it has no definition for (and counts). */
function unknownToggle(name: string): CompiledToggle {
  const toggle: EvaluatedToggle = { name, enabled: false, impressionData: false, variant: FALLBACK };
  return {
    name,
    impressionData: false,
    constant: { enabled: false, variant: FALLBACK.name, fragment: JSON.stringify(toggle) },
    cacheable: true,
    dateBoundaries: [],
    outcomes: new Map(),
    inputs: undefined,
    memo: new Map(),
  };
}

function usagePlan(toggles: readonly { name: string; outcome: Outcome }[]): UsagePlan {
  return {
    names: toggles.map((t) => t.name),
    enabled: toggles.map((t) => t.outcome.enabled),
    variants: toggles.map((t) => t.outcome.variant),
  };
}

/**
 * Evaluates toggles for one context: one SDK evaluation per toggle per request, except where the
 * result is proven to be the one that evaluation would give (see docs/performance.md).
 */
export class Evaluator {
  private current: Plan | undefined;
  /** The enhanced context and its key, per context object a caller passes again (the fast lane does). */
  private readonly prepared = new WeakMap<Context, Prepared>();

  constructor(
    private readonly features: FeatureRepository,
    private readonly options: EvaluatorOptions = {},
  ) {}

  /** The answer for a selection; byte-identical to serialising fresh `evaluate()` results. */
  answer(selection: Selection, context: Context): Answer {
    const fast = this.features.fast?.();
    if (!fast) return this.plainAnswer(selection, context);
    const plan = this.plan(fast);
    let toggles: readonly CompiledToggle[] = plan.toggles;
    let selectionKey: string = selection.kind;
    if (selection.kind === 'named') {
      const names = [...new Set(selection.names)];
      // Names the SDK's plain-object lookup resolves to something inherited are left to the SDK.
      if (names.some((n) => !plan.byName.has(n) && (n === '__proto__' || n in Object.prototype)))
        return this.plainAnswer(selection, context);
      toggles = names.map((n) => plan.byName.get(n) ?? unknownToggle(n));
      selectionKey = JSON.stringify(names);
    }
    const onlyEnabled = selection.kind === 'enabled';
    let prepared = this.prepared.get(context);
    if (!prepared) {
      const enhanced = fast.enhance(context);
      prepared = { enhanced, key: contextKey(enhanced), cacheKeys: {} };
      // Reused for the same context object only while no custom strategy (which could change it) runs.
      if (plan.builtInOnly) this.prepared.set(context, prepared);
    }
    const { enhanced, key: ctx } = prepared;
    if (ctx === undefined) return this.evaluateAll(fast, plan, selection, toggles, enhanced, false);
    // The same string object each time for a prepared context: its hash is computed once.
    const key =
      selection.kind === 'named'
        ? `${selectionKey}\u0000${ctx}`
        : (prepared.cacheKeys[selection.kind] ??= `${selectionKey}\u0000${ctx}`);
    const cached = plan.cache.get(key);
    if (cached) {
      if (inWindow(cached)) return this.fromCache(fast, cached, enhanced);
      plan.cache.delete(key);
    }
    if (plan.cache.admit(key)) return this.evaluateAndCache(fast, plan, key, toggles, onlyEnabled, enhanced);
    return this.evaluateAll(fast, plan, selection, toggles, enhanced, true);
  }

  /**
   * True when only the SDK's built-in strategies run for the current definitions: then nothing
   * changes a context during evaluation, and a caller may pass the same context object again.
   */
  onlyBuiltInStrategies(): boolean {
    const fast = this.features.fast?.();
    return fast !== undefined && this.plan(fast).builtInOnly;
  }

  /** Toggles enabled for the context, sorted by name (one plain SDK evaluation each). */
  enabled(context: Context): EvaluatedToggle[] {
    return this.all(context).filter((t) => t.enabled);
  }

  /** Every known toggle with its evaluation, sorted by name. */
  all(context: Context): EvaluatedToggle[] {
    return this.features.toggles().map((feature) => this.features.evaluate(feature.name, context));
  }

  /** The named toggles in request order, duplicates removed; unknown names come back disabled. */
  named(context: Context, names: readonly string[]): EvaluatedToggle[] {
    return [...new Set(names)].map((name) => this.features.evaluate(name, context));
  }

  /** The reference path: `evaluate()` per toggle, serialised. */
  private plainAnswer(selection: Selection, context: Context): Answer {
    const toggles =
      selection.kind === 'named'
        ? this.named(context, selection.names)
        : selection.kind === 'all'
          ? this.all(context)
          : this.enabled(context);
    const body = JSON.stringify({ toggles });
    return { body, etag: weakEtag(body) };
  }

  private plan(fast: FastEvaluation): Plan {
    const revision = this.features.revision;
    if (this.current?.revision === revision) return this.current;
    const toggles = this.features
      .toggles()
      .map((feature) => compileToggle(feature, fast, (name) => this.features.toggle(name)));
    const constants = toggles.flatMap((t) => (t.constant ? [{ name: t.name, outcome: t.constant }] : []));
    this.current = {
      revision,
      toggles,
      byName: new Map(toggles.map((t) => [t.name, t])),
      constantUsage: usagePlan(constants),
      builtInOnly: toggles.every((t) => t.cacheable),
      cache: new ResponseCache({
        maxBytes: this.options.cacheMaxBytes ?? 32 * 1024 * 1024,
        maxEntries: this.options.cacheMaxEntries ?? 10_000,
        maxSeen: 10_000,
      }),
      memoEntries: 0,
    };
    return this.current;
  }

  /** Every toggle evaluated (or taken from its memo) for a context seen once so far. */
  private evaluateAll(
    fast: FastEvaluation,
    plan: Plan,
    selection: Selection,
    toggles: readonly CompiledToggle[],
    enhanced: Context,
    memoUsable: boolean,
  ): Answer {
    const onlyEnabled = selection.kind === 'enabled';
    const countConstants = selection.kind !== 'named';
    const fragments: string[] = [];
    for (const toggle of toggles) {
      const constant = toggle.constant;
      if (constant) {
        if (!countConstants) fast.count(toggle.name, constant.enabled, constant.variant);
        if (!onlyEnabled || constant.enabled) fragments.push(constant.fragment);
        continue;
      }
      const outcome =
        memoUsable && toggle.inputs
          ? this.memoized(fast, plan, toggle, enhanced).outcome
          : this.evaluateOne(fast, toggle, enhanced);
      if (!onlyEnabled || outcome.enabled) fragments.push(outcome.fragment);
    }
    if (countConstants) fast.countPlan(plan.constantUsage, 1);
    const body = wrap(fragments);
    return { body, etag: weakEtag(body) };
  }

  /** One SDK evaluation, counted; a strategy that throws is logged and answered disabled, as `evaluate()` does. */
  private evaluateOne(fast: FastEvaluation, toggle: CompiledToggle, enhanced: Context): Outcome {
    let outcome: Outcome;
    try {
      outcome = outcomeOf(toggle, fast.resolve(toggle.name, enhanced));
    } catch (err) {
      const failed = fast.failed(toggle.name, err);
      return { enabled: failed.enabled, variant: failed.variant.name, fragment: JSON.stringify(failed) };
    }
    fast.count(toggle.name, outcome.enabled, outcome.variant);
    return outcome;
  }

  /**
   * One SDK evaluation, counted, that also proves whether the result is fixed for this context:
   * only built-in strategies ran, nothing threw, `Math.random` was not called (random rollouts,
   * `random` stickiness, or no id to be sticky on all call it), and no date of a date constraint
   * fell inside the evaluation. With the clock involved (no `currentTime` in the context) the
   * result holds while the clock stays strictly between the neighbouring dates.
   */
  private evaluateTracked(fast: FastEvaluation, toggle: CompiledToggle, enhanced: Context): Tracked {
    const dated = toggle.dateBoundaries.length > 0 && !enhanced.currentTime;
    const before = dated ? Date.now() : 0;
    const random = Math.random;
    let chance = false;
    let outcome: Outcome;
    let fixed = toggle.cacheable;
    Math.random = () => {
      chance = true;
      return random();
    };
    try {
      outcome = outcomeOf(toggle, fast.resolve(toggle.name, enhanced));
      fast.count(toggle.name, outcome.enabled, outcome.variant);
    } catch (err) {
      fixed = false;
      const failed = fast.failed(toggle.name, err);
      outcome = { enabled: failed.enabled, variant: failed.variant.name, fragment: JSON.stringify(failed) };
    } finally {
      Math.random = random;
    }
    if (chance || !fixed) return { outcome, fixed: false, ...ALWAYS };
    if (!dated) return { outcome, fixed: true, ...ALWAYS };
    const after = Date.now();
    let validFrom = -Infinity;
    let validUntil = Infinity;
    for (const at of toggle.dateBoundaries) {
      if (at < before) validFrom = Math.max(validFrom, at);
      else if (at > after) validUntil = Math.min(validUntil, at);
      else return { outcome, fixed: false, ...ALWAYS }; // a date was crossed while evaluating
    }
    return { outcome, fixed: true, validFrom, validUntil };
  }

  /** The toggle's remembered result for the values of its input fields, or a tracked evaluation. */
  private memoized(fast: FastEvaluation, plan: Plan, toggle: CompiledToggle, enhanced: Context): Tracked {
    const key = memoKey(toggle.inputs ?? [], enhanced);
    const hit = toggle.memo.get(key);
    if (hit && inWindow(hit)) {
      fast.count(toggle.name, hit.outcome.enabled, hit.outcome.variant);
      return { outcome: hit.outcome, fixed: true, validFrom: hit.validFrom, validUntil: hit.validUntil };
    }
    const tracked = this.evaluateTracked(fast, toggle, enhanced);
    if (tracked.fixed) {
      if (plan.memoEntries >= (this.options.memoMaxEntries ?? 100_000)) {
        for (const t of plan.toggles) t.memo.clear();
        plan.memoEntries = 0;
      }
      if (!hit) plan.memoEntries += 1;
      toggle.memo.set(key, tracked);
    }
    return tracked;
  }

  private fromCache(fast: FastEvaluation, cached: CachedAnswer, enhanced: Context): Answer {
    fast.countPlan(cached.usage, 1);
    if (cached.complete) return cached.complete;
    const fragments: string[] = [];
    for (const part of cached.parts) {
      if (typeof part === 'string') {
        fragments.push(part);
        continue;
      }
      const outcome = this.evaluateOne(fast, part, enhanced);
      if (!cached.onlyEnabled || outcome.enabled) fragments.push(outcome.fragment);
    }
    const body = wrap(fragments);
    return { body, etag: weakEtag(body) };
  }

  /** Evaluates every toggle for a context seen before, and caches what is fixed for it. */
  private evaluateAndCache(
    fast: FastEvaluation,
    plan: Plan,
    key: string,
    toggles: readonly CompiledToggle[],
    onlyEnabled: boolean,
    enhanced: Context,
  ): Answer {
    const fixed: { name: string; outcome: Outcome }[] = [];
    const fragments: string[] = [];
    const parts: (string | CompiledToggle)[] = [];
    let run: string[] = [];
    let validFrom = -Infinity;
    let validUntil = Infinity;
    for (const toggle of toggles) {
      let tracked: Tracked;
      if (toggle.constant) {
        fast.count(toggle.name, toggle.constant.enabled, toggle.constant.variant);
        tracked = { outcome: toggle.constant, fixed: true, ...ALWAYS };
      } else {
        tracked = toggle.inputs
          ? this.memoized(fast, plan, toggle, enhanced)
          : this.evaluateTracked(fast, toggle, enhanced);
      }
      const { outcome } = tracked;
      const listed = !onlyEnabled || outcome.enabled;
      if (listed) fragments.push(outcome.fragment);
      if (tracked.fixed) {
        validFrom = Math.max(validFrom, tracked.validFrom);
        validUntil = Math.min(validUntil, tracked.validUntil);
        fixed.push({ name: toggle.name, outcome });
        if (listed) run.push(outcome.fragment);
      } else {
        if (run.length > 0) parts.push(run.join(','));
        run = [];
        parts.push(toggle);
      }
    }
    if (run.length > 0) parts.push(run.join(','));
    const body = wrap(fragments);
    const answer: Answer = { body, etag: weakEtag(body) };
    if (fixed.length === 0) return answer;
    const complete = parts.every((p) => typeof p === 'string');
    plan.cache.set(key, {
      validFrom,
      validUntil,
      usage: usagePlan(fixed),
      onlyEnabled,
      complete: complete ? { body: Buffer.from(body), etag: answer.etag } : undefined,
      parts: complete ? [] : parts,
      bytes: 2 * key.length + (complete ? body.length : 2 * body.length) + 24 * fixed.length + 256,
    });
    return answer;
  }
}
