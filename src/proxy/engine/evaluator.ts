import type { Context } from 'unleash-client';
import type { StrategyTransportInterface } from '../upstream/sdk/types';
import { etagMatches } from '../../common/http/etag';
import type { Logger } from '../../common/logging/logger';
import { RateLimitedLog } from '../../common/logging/rate-limited-log';
import { ownCopy } from '../context/build-context';
import { canonicalContext } from '../context/canonical-context';
import type { EvaluatedToggle, FastEvaluation, FeatureRepository } from '../upstream/feature-repository';
import { AnswerCache } from './answer-cache';
import { BodyForms } from './body-forms';
import { clockWindow, combine, isDeterministic, type Determinism } from './determinism';
import { bodyEtag, derivedEtag } from './etag';
import { EvaluationMemory } from './evaluation-memory';
import type { BudgetMember } from '../budgets/shared-budget';
import {
  compilePlan,
  evaluatedOf,
  memoKey,
  outcomeOf,
  QUARANTINED,
  type MemoGroup,
  type MemoRow,
  type CompiledToggle,
  type Outcome,
  type Plan,
} from './plan';
import { disabledToggle, joinEntries, toEvaluatedToggle, toggleEntry, toggleListBody } from './toggle-json';
import { UsageTally } from './usage-tally';
import { CONSTANT, REMEMBERED } from './toggle-steps';
import {
  AnswerTemplates,
  PIECES,
  pieceOf,
  templateBytes,
  templateSignature,
  type AnswerTemplate,
} from './answer-templates';
import { RequestScope } from './compiled/scope';
import { FlatToggles, NOT_FLAT } from './compiled/flat';

/** Which toggles a request asks for. */
export type Selection = { kind: 'enabled' } | { kind: 'all' } | { kind: 'named'; names: readonly string[] };

/**
 * A request's inputs resolved against one definitions revision (`revision`, -1 when the SDK's full
 * evaluation runs) and clock window: what `Evaluator.answer` needs. It holds no compiled state, so
 * keeping one never keeps an old revision alive.
 */
export interface Prepared {
  readonly revision: number;
  readonly selection: Selection;
  /** The context as given, to prepare again for another revision. */
  readonly context: Context;
  /** The context the SDK evaluates with (its static fields added). */
  readonly enhanced: Context;
  /** The clock's window among the definitions' dates, when the selection's date constraints read the clock. */
  readonly window: string | undefined;
  /** The derived ETag of a pure answer; undefined when only the body can validate it. */
  readonly etag: string | undefined;
}

/** What to write for a request: a toggle list with its validator, or 304 for the client's own copy. */
export type Reply =
  | {
      readonly notModified: false;
      readonly body: string | Buffer;
      readonly etag: string;
      /** Gives the body's memory back for reuse: call once the body was written and is dropped. */
      readonly release?: () => void;
      /** A kept body's other forms (its compressed bytes by encoding), kept with it. */
      readonly forms?: BodyForms;
    }
  | { readonly notModified: true; readonly etag: string };

export { DEFAULT_BUDGETS, type EvaluationBudgets } from './evaluation-memory';

/** Per-row overhead counted against the memo budget besides the key's characters and the slots. */
const MEMO_ENTRY_BYTES = 96;

/** What one memo row is counted as: its key, its overhead and 8 bytes per slot (an id, and its share of the array). */
const rowBytes = (key: string, group: MemoGroup): number =>
  2 * key.length + MEMO_ENTRY_BYTES + 8 * group.size;

interface CachedAnswer {
  readonly body: Buffer;
  /** Its other forms (compressed bytes), kept with it; absent for OFREP's flags, joined with more per request. */
  readonly forms?: BodyForms;
  /** The outcomes it counts, once each, whenever it is served. */
  readonly usage: readonly Outcome[];
}

/** The state that lives and dies with one definitions revision. */
interface RevisionState {
  readonly plan: Plan;
  /** Outcomes of every context-independent toggle, counted as one answer per request listing all toggles. */
  readonly constants: readonly Outcome[];
  readonly cache: AnswerCache<CachedAnswer>;
  readonly usage: UsageTally;
  /** What the engine's compiled toggles share within one request (`compiled/scope.ts`). */
  readonly scope: RequestScope;
  /** The compiled toggles the answer loop evaluates from typed arrays (`compiled/flat.ts`). */
  readonly flat: FlatToggles;
  /** Bytes and items this revision holds in the memo budget: its memo rows and its answer templates. */
  memoBytes: number;
  memoRows: number;
  /** The answers' user-independent parts (`answer-templates.ts`), held in the memo budget with the rows. */
  readonly templates: AnswerTemplates;
  /**
   * The memo group that gives up its oldest row next when the budget is reached; the templates'
   * turn when it equals the number of groups.
   */
  evictAt: number;
  /** This revision's memo as a holder of the app's memo budget. */
  readonly memoMember: BudgetMember;
}

/** The budget of a closed evaluator's caches: nothing is kept. */
const NOTHING_KEPT = { maxBytes: 0, maxEntries: 0, maxSeen: 1 };

/** `Outcome.id` of a toggle whose evaluation threw: answered disabled and never counted. */
export const FAILED = -2;

/**
 * An answer listing every toggle in another shape than `/proxy`'s (OFREP's flags), written by the
 * same answer loop (`Evaluator.everyToggle`; `one` for a single toggle) with the shape's own bytes for each toggle.
 */
export interface AnswerShape {
  /** Names the shape in the signatures of answer templates (`answer-templates.ts`). */
  readonly kind: string;
  /**
   * The shape's entries of a revision (kept by the shape, per revision): by interned outcome id,
   * filled by `entry` as outcomes are first seen; and, by toggle index, 1 for a toggle whose entry
   * also depends on the strategy that enabled it (evaluated with it, even when remembered).
   */
  entries(plan: Plan): ShapeEntries;
  /**
   * The entry of a toggle's outcome, with the strategy that enabled it for a `decided` toggle; kept
   * in `byId` for an interned outcome of any other toggle.
   */
  entry(toggle: CompiledToggle, outcome: Outcome, decided: StrategyTransportInterface | undefined): Buffer;
  /** The entry of a toggle the engine did not compile, evaluated by the shape (the loop neither evaluates nor counts it). */
  uncompiled(toggle: CompiledToggle): Buffer;
}

/**
 * A shape's entries of a revision (`AnswerShape.entries`): by interned outcome id, and by toggle
 * index 1 for a toggle evaluated with the strategy that enabled it.
 */
export interface ShapeEntries {
  readonly byId: (Buffer | undefined)[];
  readonly decided: Uint8Array;
}

/** What an answer's loop wrote into its list of entries. */
interface Written {
  /** The entries' total length. */
  readonly bytes: number;
  /** With `collect`, what it counted (to keep the answer with); undefined when it may not be kept. */
  readonly usage: readonly Outcome[] | undefined;
}

/** An answer listing every toggle in another shape (`Evaluator.everyToggle`): its entries, or one piece with all of them. */
export interface ShapedAnswer {
  readonly entries: readonly Buffer[];
  readonly bytes: number;
}

/** What a kept answer costs the answer budget: its bytes, its usage list, the entry itself. */
const keptBytes = (body: Buffer, usage: readonly Outcome[]): number => body.length + 8 * usage.length + 160;

/** Names the definitions do not have: answered disabled with the fallback variant, never counted. */
function unknownEntry(name: string): Buffer {
  return toggleEntry(disabledToggle(name, false));
}

/**
 * The toggles of an answer in its order, as indices into `Plan.toggles`; a name the definitions
 * lack is a negative index, -1 for `unknown[0]`, -2 for `unknown[1]`, …
 */
interface AnswerOrder {
  readonly indices: ArrayLike<number>;
  readonly unknown: readonly string[];
}

const NO_NAMES: readonly string[] = Object.freeze([]);
const ALL: Selection = Object.freeze({ kind: 'all' });
const NOTHING = Buffer.alloc(0);

/** Not computed yet, in `MemoKeys`' per-group array. */
const UNKNOWN = null;

/**
 * What one request computes once for all its toggles: per memo group (`Plan.groups`: toggles with
 * the same input fields and determinism), whether results are remembered for this context and under
 * which key (with the clock's window when the group reads the clock); memo keys by input-field list;
 * and the checks of chance guards (random strategies' constraints), by the guard's constraints.
 */
class MemoKeys {
  private readonly plain = new Map<readonly string[], string | undefined>();
  private readonly groupKeys: (string | undefined | typeof UNKNOWN)[];
  private readonly rows: (MemoRow | undefined | typeof UNKNOWN)[];
  readonly guards = new Map<string, boolean>();

  constructor(
    private readonly groups: readonly MemoGroup[],
    private readonly context: Context,
    private readonly window: string | undefined,
    private readonly maxLength: number,
  ) {
    this.groupKeys = new Array<string | undefined | typeof UNKNOWN>(groups.length).fill(UNKNOWN);
    this.rows = new Array<MemoRow | undefined | typeof UNKNOWN>(groups.length).fill(UNKNOWN);
  }

  /** The group's remembered row for its key (`ofGroup`), looked up once per request. */
  rowOf(group: number, key: string): MemoRow | undefined {
    const known = this.rows[group];
    if (known !== UNKNOWN) return known;
    const row = this.groups[group].memo.get(key);
    this.rows[group] = row;
    return row;
  }

  /** Every group's key for the context (undefined for a group not remembered for it), in group order. */
  all(): (string | undefined)[] {
    const keys: (string | undefined)[] = [];
    for (let group = 0; group < this.groups.length; group++) keys.push(this.ofGroup(group));
    return keys;
  }

  /** The group's row for its key as the memo holds it now (not the request's first look). */
  currentRow(group: number, key: string): MemoRow | undefined {
    return this.groups[group].memo.get(key);
  }

  /** Notes a row made for the group's key during this request. */
  keepRow(group: number, row: MemoRow): void {
    this.rows[group] = row;
  }

  /** The memo key of the context for a toggle of this group; undefined when not remembered. */
  ofGroup(group: number): string | undefined {
    const known = this.groupKeys[group];
    if (known !== UNKNOWN) return known;
    const { inputs, determinism } = this.groups[group];
    const clocked = determinism.currentTime && this.window !== undefined;
    let key: string | undefined;
    if (isDeterministic(determinism, this.context, clocked, this.guards)) {
      key = this.plain.get(inputs);
      if (key === undefined && !this.plain.has(inputs)) {
        key = memoKey(inputs, this.context, this.maxLength);
        this.plain.set(inputs, key);
      }
      if (key !== undefined && clocked) key = `${key}@${this.window ?? ''}`;
    }
    this.groupKeys[group] = key;
    return key;
  }
}

/**
 * Answers a selection of toggles for one context: one SDK evaluation per toggle per request, except
 * where the answer is proven to be the one that evaluation would give. Pure answers (see
 * `determinism.ts`) get a derived ETag, so a matching `If-None-Match` costs no evaluation at all.
 */
export class Evaluator {
  private state: RevisionState | undefined;
  private readonly failures: RateLimitedLog;
  /** The entries of the answer being written (`evaluate`), emptied after each; `writing` while in use. */
  private readonly entries: Buffer[] = [];
  private writing = false;
  private closed = false;

  constructor(
    private readonly features: FeatureRepository,
    private readonly logger: Logger,
    /** The app's evaluation memory, shared with its other evaluators (a private one by default). */
    private readonly memory: EvaluationMemory = new EvaluationMemory(),
    /** The key scope these answers belong to, part of their derived ETags (`etag.ts`). */
    private readonly scope?: string,
  ) {
    this.failures = new RateLimitedLog(logger, 60_000);
    // Compiled when definitions arrive, not by the first request after them.
    features.onChange(() => {
      const fast = features.fast?.();
      if (fast) this.revisionState(fast);
    });
    features.beforeUsageSent(() => this.state?.usage.flush());
  }

  /**
   * Toggles of the current definitions the SDK evaluates on every request (not constant, not
   * quarantined, not compiled by the engine: custom strategies, or definitions the engine does
   * not know); 0 before the first revision is compiled.
   */
  sdkEvaluated(): number {
    return this.state?.plan.sdkEvaluated.length ?? 0;
  }

  /** The reply to a request for `selection` with `context`, given the client's `If-None-Match`. */
  reply(selection: Selection, context: Context, ifNoneMatch: string | undefined): Reply {
    return this.answer(this.prepare(selection, context), ifNoneMatch);
  }

  /**
   * A request's inputs resolved against the current definitions revision and clock window: the
   * enhanced context and, for a pure answer, its derived ETag. Nothing is evaluated yet.
   */
  prepare(selection: Selection, context: Context): Prepared {
    const fast = this.features.fast?.();
    if (!fast)
      return { revision: -1, selection, context, enhanced: context, window: undefined, etag: undefined };
    const { plan } = this.revisionState(fast);
    const enhanced = fast.enhance(context);
    let determinism: Determinism = plan.determinism;
    let selectionKey: string = selection.kind;
    if (selection.kind === 'named') {
      const names = unique(selection.names);
      determinism = combine(names.flatMap((n) => plan.byName.get(n)?.determinism ?? []));
      selectionKey = JSON.stringify(names);
    }
    // Without the client's own time, date constraints read the clock: its window joins the inputs.
    const window =
      determinism.currentTime && !enhanced.currentTime && plan.dateBoundaries.length > 0
        ? clockWindow(plan.dateBoundaries, Date.now())
        : undefined;
    const clocked = window !== undefined;
    const canonical = isDeterministic(determinism, enhanced, clocked)
      ? canonicalContext(enhanced)
      : undefined;
    const etag =
      canonical === undefined
        ? undefined
        : derivedEtag(
            plan.digest,
            clocked ? `${selectionKey}@${window}` : selectionKey,
            canonical,
            this.scope,
          );
    return { revision: plan.revision, selection, context, enhanced, window, etag };
  }

  /**
   * The same inputs, prepared again when the definitions changed or a date passed since `prepared`
   * was made; `prepared` itself otherwise. Lets a caller keep a prepared request (see
   * `connection-memo.ts`) without ever answering from a stale one.
   */
  refresh(prepared: Prepared): Prepared {
    const plan = this.state?.plan;
    const stale =
      prepared.revision === -1 ||
      plan === undefined ||
      plan.revision !== this.features.revision ||
      prepared.revision !== plan.revision ||
      (prepared.window !== undefined && clockWindow(plan.dateBoundaries, Date.now()) !== prepared.window);
    return stale ? this.prepare(prepared.selection, prepared.context) : prepared;
  }

  /** The reply for prepared inputs: 304 on a matching derived ETag, a kept answer, or an evaluation. */
  answer(prepared: Prepared, ifNoneMatch: string | undefined): Reply {
    const fresh = this.refresh(prepared);
    const fast = this.features.fast?.();
    if (!fast || fresh.revision === -1)
      return this.withBodyEtag(this.plainBody(fresh.selection, fresh.context), ifNoneMatch);
    const state = this.revisionState(fast);
    const { etag, selection, enhanced, window } = fresh;
    const order = this.orderOf(state.plan, selection);
    if (etag === undefined) {
      const { body, release } = this.evaluate(fast, state, selection, order, enhanced, window, false);
      return this.withBodyEtag(body, ifNoneMatch, release);
    }
    if (etagMatches(ifNoneMatch, etag)) return { notModified: true, etag };
    const cached = state.cache.get(etag);
    if (cached) {
      state.usage.countAnswer(cached.usage);
      return { notModified: false, body: cached.body, etag, forms: cached.forms };
    }
    // Kept only on its second sighting: a first one (a new user) collects no usage list to keep.
    const keep = state.cache.admit(etag);
    const { body, usage, release } = this.evaluate(fast, state, selection, order, enhanced, window, keep);
    // A date passed while evaluating: this body belongs to no single window, validate it by itself.
    if (window !== undefined && clockWindow(state.plan.dateBoundaries, Date.now()) !== window)
      return this.withBodyEtag(body, undefined, release);
    if (usage === undefined) return { notModified: false, body, etag, release };
    const cache = state.cache;
    const forms = new BodyForms((bytes) => cache.grow(etag, bytes));
    cache.set(etag, { body, usage, forms }, keptBytes(body, usage));
    return { notModified: false, body, etag, release, forms };
  }

  /**
   * One toggle for prepared inputs, evaluated and counted as an answer naming only it is: its
   * outcome (`enabled`, the serialised entry), or undefined for a name the definitions lack. The
   * single-toggle answers (`/api/frontend/features/{name}`) are written from it.
   */
  toggle(prepared: Prepared, name: string): Pick<Outcome, 'enabled' | 'entry'> | undefined {
    const fresh = this.refresh(prepared);
    const fast = this.features.fast?.();
    if (!fast || fresh.revision === -1) return this.plainToggle(name, fresh.context);
    const state = this.revisionState(fast);
    const toggle = state.plan.byName.get(name);
    if (toggle === undefined) return undefined;
    const constant = toggle.constant;
    if (constant) {
      if (constant.id !== QUARANTINED) state.usage.count(constant);
      return constant;
    }
    const { enhanced, window } = fresh;
    const keys = new MemoKeys(state.plan.groups, enhanced, window, this.memory.budgets.memoKeyMaxLength);
    state.scope.begin(enhanced);
    return asOutcome(state.plan, this.evaluateToggle(fast, state, toggle, enhanced, window, keys));
  }

  /**
   * Every toggle of the revision for prepared inputs, for an answer of another shape listing every
   * toggle (OFREP's flags), kept like `/proxy`'s answers under `key` (that shape's own derived ETag
   * of `prepared`; none for an answer that is not pure): a kept answer's bytes are served and
   * counted without evaluating. Otherwise every toggle goes through the answer loop of `/proxy`
   * (constants from the plan, few-valued inputs from their memo, the rest by the engine or the SDK,
   * counted as an answer listing every toggle is), written with `shape`'s entries; a toggle the
   * shape says depends on the strategy that enabled it is evaluated even when remembered; an
   * uncompiled one is left to the shape (not evaluated or counted here). The answer is kept when
   * its key was seen before, no toggle failed and the shape evaluated none. False (nothing
   * evaluated) while the SDK's full evaluation must run.
   */
  everyToggle(prepared: Prepared, key: string | undefined, shape: AnswerShape): ShapedAnswer | false {
    const fresh = this.refresh(prepared);
    const fast = this.features.fast?.();
    if (!fast || fresh.revision === -1) return false;
    const state = this.revisionState(fast);
    // `key` is the caller's for `prepared`: kept answers only while that is still current
    const pure = key !== undefined && fresh === prepared && fresh.etag !== undefined;
    if (pure) {
      const kept = state.cache.get(key);
      if (kept) {
        state.usage.countAnswer(kept.usage);
        return { entries: [kept.body], bytes: kept.body.length };
      }
    }
    const collect = pure && state.cache.admit(key);
    const entries: Buffer[] = [];
    const { enhanced, window } = fresh;
    const order = { indices: state.plan.steps.all, unknown: NO_NAMES };
    const { bytes, usage } = this.evaluateInto(
      entries,
      fast,
      state,
      ALL,
      order,
      enhanced,
      window,
      collect,
      shape,
    );
    if (
      usage === undefined ||
      (window !== undefined && clockWindow(state.plan.dateBoundaries, Date.now()) !== window)
    )
      return { entries, bytes };
    const body = joinEntries(NOTHING, entries, NOTHING, undefined, bytes);
    state.cache.set(key as string, { body, usage }, keptBytes(body, usage));
    return { entries: [body], bytes: body.length };
  }

  /**
   * `everyToggle` for one named toggle, counted as an answer naming only it is (OFREP's single
   * flag): its entry in `shape`, evaluated with the strategy that enabled it when the shape says
   * its entry depends on that, or left to the shape for an uncompiled toggle. Undefined, with
   * nothing evaluated, for a name the definitions lack or while the SDK's full evaluation must run.
   */
  one(prepared: Prepared, name: string, shape: AnswerShape): Buffer | undefined {
    const fresh = this.refresh(prepared);
    const fast = this.features.fast?.();
    if (!fast || fresh.revision === -1) return undefined;
    const state = this.revisionState(fast);
    const toggle = state.plan.byName.get(name);
    if (toggle === undefined) return undefined;
    const { enhanced, window } = fresh;
    state.scope.begin(enhanced);
    if (toggle.constant) {
      if (toggle.constant.id !== QUARANTINED) state.usage.count(toggle.constant);
      return shape.entry(toggle, toggle.constant, undefined);
    }
    if (toggle.uncompiled) return shape.uncompiled(toggle);
    if (shape.entries(state.plan).decided[toggle.index] === 1) {
      const { outcome, decided } = this.decide(fast, state, toggle, enhanced);
      return shape.entry(toggle, outcome, decided);
    }
    const keys = new MemoKeys(state.plan.groups, enhanced, window, this.memory.budgets.memoKeyMaxLength);
    const evaluated = this.evaluateToggle(fast, state, toggle, enhanced, window, keys);
    return shape.entry(toggle, asOutcome(state.plan, evaluated), undefined);
  }

  /**
   * One evaluation of a toggle (the engine's or the SDK's) that also tells which strategy enabled
   * it, never from the memo; counted unless it threw (then disabled, `FAILED`).
   */
  private decide(
    fast: FastEvaluation,
    state: RevisionState,
    toggle: CompiledToggle,
    enhanced: Context,
  ): { readonly outcome: Outcome; readonly decided: StrategyTransportInterface | undefined } {
    let outcome: Outcome;
    let decided: StrategyTransportInterface | undefined;
    try {
      const engine = toggle.engine;
      const result = engine
        ? engine.evaluate(state.scope)
        : fast.resolve(toggle.name, toggle.customCode ? ownCopy(enhanced) : enhanced);
      decided = !result.feature_enabled
        ? undefined
        : engine
          ? engine.decided
          : fast.decidingStrategy(toggle.name);
      outcome = outcomeOf(toggle, result);
    } catch (err) {
      fast.failed(toggle.name, err);
      return { outcome: failedOutcome(toggle), decided: undefined };
    }
    state.usage.count(outcome);
    return { outcome, decided };
  }

  /** The toggles a selection lists, in answer order (`AnswerOrder`). */
  private orderOf(plan: Plan, selection: Selection): AnswerOrder {
    if (selection.kind !== 'named') return { indices: plan.steps.all, unknown: NO_NAMES };
    const unknown: string[] = [];
    const indices = unique(selection.names).map((n) => {
      const toggle = plan.byName.get(n);
      if (toggle) return toggle.index;
      unknown.push(n);
      return -unknown.length;
    });
    return { indices, unknown };
  }

  private withBodyEtag(body: string | Buffer, ifNoneMatch: string | undefined, release?: () => void): Reply {
    const etag = bodyEtag(body);
    if (!etagMatches(ifNoneMatch, etag)) return { notModified: false, body, etag, release };
    release?.();
    return { notModified: true, etag };
  }

  private revisionState(fast: FastEvaluation): RevisionState {
    const revision = this.features.revision;
    if (this.state?.plan.revision === revision) return this.state;
    const plan = compilePlan(
      revision,
      this.features,
      fast,
      // everything its answers depend on: for a project view, parents in other projects too
      () => this.features.answerDefinitions(),
      (name, err) =>
        this.failures.error(
          `compiling toggle "${name}" failed; the SDK evaluates it alone: ${String(err)}`,
          name,
        ),
    );
    // The replaced revision's counts go first: they are counts all the same.
    this.state?.usage.flush();
    if (this.state) this.retire(this.state);
    const memo = this.memory.memo;
    const state: RevisionState = {
      plan,
      constants: plan.toggles.flatMap((t) => (t.constant && !t.quarantined ? t.constant : [])),
      usage: new UsageTally(plan.outcomes, (name, enabled, variant, times) =>
        this.features.addUsage(name, enabled, variant, times),
      ),
      // a closed evaluator (a dropped view answering a request in flight) keeps nothing
      cache: new AnswerCache(this.closed ? NOTHING_KEPT : this.memory.answers),
      scope: new RequestScope(plan.checks),
      flat: new FlatToggles(plan.toggles),
      memoBytes: 0,
      memoRows: 0,
      templates: new AnswerTemplates(),
      evictAt: 0,
      memoMember: { evictOne: () => this.forgetOne(state) },
    };
    if (!this.closed) memo.join(state.memoMember);
    if (plan.sdkEvaluated.length > 0)
      this.logger.debug(
        `the SDK evaluates ${plan.sdkEvaluated.length} toggle(s) the engine does not compile (custom strategies or definitions it does not know): ${plan.sdkEvaluated.slice(0, 20).join(', ')}${plan.sdkEvaluated.length > 20 ? ', …' : ''}`,
      );
    this.state = state;
    return state;
  }

  /** Gives a revision's answers and memo back to the app's budgets. */
  private retire(state: RevisionState): void {
    state.cache.close();
    this.memory.memo.leave(state.memoMember);
    // its rows go with its plan
    this.memory.memo.release(state.memoBytes, state.memoRows);
    state.templates.clear();
    state.memoBytes = 0;
    state.memoRows = 0;
  }

  /**
   * Hands pending usage over and gives this evaluator's memory back to the app's budgets (a
   * dropped project view). A request still in flight is answered, without keeping anything.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.state?.usage.flush();
    if (this.state) this.retire(this.state);
    this.state = undefined;
  }

  /**
   * Evaluates the selection (each toggle once, counted) and serialises it as `/proxy`'s toggle
   * list; with `collect`, also the list of what it counted (to keep the answer with), undefined
   * when a toggle failed.
   */
  private evaluate(
    fast: FastEvaluation,
    state: RevisionState,
    selection: Selection,
    order: AnswerOrder,
    enhanced: Context,
    window: string | undefined,
    collect: boolean,
  ): { body: Buffer; usage: readonly Outcome[] | undefined; release: (() => void) | undefined } {
    // the answer is written before this returns: one list of entries serves every request (a
    // custom strategy's code runs within; should it ever answer through here, it gets its own)
    const shared = !this.writing;
    const entries = shared ? this.entries : [];
    this.writing = true;
    try {
      const { bytes, usage } = this.evaluateInto(
        entries,
        fast,
        state,
        selection,
        order,
        enhanced,
        window,
        collect,
      );
      if (collect) return { body: toggleListBody(entries, bytes), usage, release: undefined };
      // not kept: written once, its memory reused afterwards
      let release: (() => void) | undefined;
      const body = toggleListBody(entries, bytes, (length) => {
        const taken = this.memory.bodies.take(length);
        release = taken.release;
        return taken.body;
      });
      return { body, usage, release };
    } finally {
      if (shared) {
        entries.length = 0;
        this.writing = false;
      }
    }
  }

  /**
   * The answer loop of every answer listing toggles: each toggle of `order` evaluated once (or
   * remembered, or constant), counted, and its entry added to `entries`: `/proxy`'s entry, or with
   * a `shape`, that shape's (`AnswerShape`). An answer listing every toggle whose context's memo
   * keys were seen before is written from their template instead (`fromTemplate`).
   */
  private evaluateInto(
    entries: Buffer[],
    fast: FastEvaluation,
    state: RevisionState,
    selection: Selection,
    order: AnswerOrder,
    enhanced: Context,
    window: string | undefined,
    collect: boolean,
    shape?: AnswerShape,
  ): Written {
    const onlyEnabled = selection.kind === 'enabled';
    const countConstantsOnce = selection.kind !== 'named';
    const { plan, usage: tally } = state;
    const { toggles, steps, table } = plan;
    const { kind: kinds, group: groups, slot: slots, constantId } = steps;
    const shaped = shape?.entries(plan);
    const indices = order.indices;
    const keys = new MemoKeys(plan.groups, enhanced, window, this.memory.budgets.memoKeyMaxLength);
    state.scope.begin(enhanced);
    const gathered: Gathered = { bytes: 0, counted: [], cacheable: true };
    // an answer listing every toggle: from the template of the context's memo keys when there is one
    const signature =
      selection.kind === 'named'
        ? undefined
        : templateSignature(`${shape?.kind ?? 'proxy'} ${selection.kind}`, keys.all());
    const template = signature === undefined ? undefined : state.templates.get(signature);
    if (template !== undefined) {
      this.fromTemplate(
        entries,
        gathered,
        fast,
        state,
        template,
        onlyEnabled,
        enhanced,
        window,
        keys,
        collect,
        shape,
        shaped,
      );
      tally.countAnswer(template.usage);
    } else {
      // Per toggle, compact arrays decide (`toggle-steps.ts`, `outcome-table.ts`); a toggle's and an
      // outcome's objects are read only to evaluate it, or for an outcome that is not interned.
      for (let k = 0; k < indices.length; k++) {
        const i = indices[k];
        if (i < 0) {
          const unknown = unknownEntry(order.unknown[-i - 1]);
          entries.push(unknown);
          gathered.bytes += unknown.length;
          continue;
        }
        let id = -1;
        let outcome: Outcome | undefined;
        const kind = kinds[i];
        if (kind === CONSTANT) {
          id = constantId[i];
          if (id < 0) outcome = toggles[i].constant;
          if (!countConstantsOnce && id !== QUARANTINED) {
            if (id >= 0) tally.countId(id);
            else if (outcome) tally.count(outcome);
            if (collect) gathered.counted.push(outcome ?? table.list[id]);
          }
        } else if (shape !== undefined && shaped !== undefined && shaped.decided[i] === 1) {
          const entry = this.decidedEntry(fast, state, toggles[i], enhanced, shape, gathered, collect);
          entries.push(entry);
          gathered.bytes += entry.length;
          continue;
        } else {
          if (kind === REMEMBERED) {
            const group = groups[i];
            const key = keys.ofGroup(group);
            if (key !== undefined) id = keys.rowOf(group, key)?.[slots[i]] ?? -1;
            if (id >= 0) {
              tally.countId(id);
              if (collect) gathered.counted.push(table.list[id]);
            }
          }
          if (id < 0) {
            const evaluated = this.evaluatedAt(fast, state, i, enhanced, window, keys, gathered, collect);
            if (typeof evaluated === 'number') id = evaluated;
            else outcome = evaluated;
          }
        }
        putEntry(entries, gathered, plan, i, id, outcome, onlyEnabled, shape, shaped?.byId);
      }
      // the memo now holds this context's remembered results: on a second sighting, its template is made
      if (signature !== undefined && state.templates.admit(signature))
        this.keepTemplate(state, signature, indices, onlyEnabled, keys, shape, shaped);
    }
    if (countConstantsOnce) tally.countAnswer(state.constants);
    // A toggle that failed is not counted: such an answer is not kept, its usage would be wrong.
    const { bytes, counted, cacheable } = gathered;
    const usage =
      !collect || !cacheable ? undefined : countConstantsOnce ? state.constants.concat(counted) : counted;
    return { bytes, usage };
  }

  /**
   * The answer loop of an answer listing every toggle, from a template (`answer-templates.ts`):
   * its runs copied, the toggles between them evaluated (or remembered) as `evaluateInto` does.
   * The runs' remembered outcomes are counted by the caller, once each.
   */
  private fromTemplate(
    entries: Buffer[],
    gathered: Gathered,
    fast: FastEvaluation,
    state: RevisionState,
    template: AnswerTemplate,
    onlyEnabled: boolean,
    enhanced: Context,
    window: string | undefined,
    keys: MemoKeys,
    collect: boolean,
    shape: AnswerShape | undefined,
    /** `shape`'s entries of the revision, as the caller got them. */
    shaped: ShapeEntries | undefined,
  ): void {
    const { plan } = state;
    const { toggles } = plan;
    const { evaluated, runs } = template;
    // (one by one: a spread of thousands of outcomes as arguments could overflow the stack)
    if (collect) for (const outcome of template.usage) gathered.counted.push(outcome);
    if (runs[0].length > 0) {
      entries.push(runs[0]);
      gathered.bytes += runs[0].length;
    }
    for (let j = 0; j < evaluated.length; j++) {
      const i = evaluated[j];
      // the run after this toggle: in its piece, or copied after its entry
      const next = runs[j + 1];
      if (shape !== undefined && shaped !== undefined && shaped.decided[i] === 1) {
        const entry = this.decidedEntry(fast, state, toggles[i], enhanced, shape, gathered, collect);
        entries.push(entry);
        gathered.bytes += entry.length;
      } else {
        const result = this.evaluatedAt(fast, state, i, enhanced, window, keys, gathered, collect);
        if (typeof result !== 'number')
          putEntry(entries, gathered, plan, i, -1, result, onlyEnabled, shape, shaped?.byId);
        else {
          const piece = pieceOf(template, j, result);
          if (piece !== undefined) {
            entries.push(piece);
            gathered.bytes += piece.length;
            continue;
          }
          const before = entries.length;
          putEntry(entries, gathered, plan, i, result, undefined, onlyEnabled, shape, shaped?.byId);
          if (next.length > 0 && entries.length > before)
            this.keepPiece(state, template, j, result, entries[before], next);
        }
      }
      if (next.length > 0) {
        entries.push(next);
        gathered.bytes += next.length;
      }
    }
  }

  /**
   * Keeps the piece of a template's toggle `j` for outcome `id` (its entry and the run after it,
   * joined), within the memo budget; nothing when it does not fit or the template went meanwhile.
   */
  private keepPiece(
    state: RevisionState,
    template: AnswerTemplate,
    j: number,
    id: number,
    entry: Buffer,
    next: Buffer,
  ): void {
    if (this.closed || state !== this.state) return;
    // no free slot: not worth reserving
    if (template.pieceIds[PIECES * j + PIECES - 1] >= 0) return;
    const piece = joinEntries(NOTHING, [entry, next], NOTHING);
    const bytes = piece.length + 64;
    if (!this.memory.memo.reserveMore(bytes)) return;
    if (state.templates.addPiece(template, j, id, piece, bytes)) state.memoBytes += bytes;
    else this.memory.memo.release(bytes, 0);
  }

  /**
   * Makes and keeps the template of a signature from what the memo holds now: constant toggles and
   * remembered ones whose row for the context's key has their outcome go into runs (with a shape,
   * its entries; a toggle the shape evaluates with its deciding strategy is evaluated per request);
   * every other toggle is evaluated per request. Kept within the memo budget (nothing kept when it
   * does not fit).
   */
  private keepTemplate(
    state: RevisionState,
    signature: string,
    indices: ArrayLike<number>,
    onlyEnabled: boolean,
    keys: MemoKeys,
    shape: AnswerShape | undefined,
    shaped: ShapeEntries | undefined,
  ): void {
    if (this.closed || state !== this.state) return;
    const { plan, templates } = state;
    const { toggles, steps, table } = plan;
    const evaluated: number[] = [];
    const runs: Buffer[] = [];
    const usage: Outcome[] = [];
    let run: Buffer[] = [];
    for (let k = 0; k < indices.length; k++) {
      const i = indices[k];
      let outcome: Outcome | undefined;
      const kind = steps.kind[i];
      if (kind === CONSTANT) outcome = toggles[i].constant;
      else if (kind === REMEMBERED && shaped?.decided[i] !== 1) {
        const group = steps.group[i];
        const key = keys.ofGroup(group);
        const id = key === undefined ? -1 : (keys.currentRow(group, key)?.[steps.slot[i]] ?? -1);
        if (id >= 0) {
          outcome = table.list[id];
          usage.push(outcome);
        }
      }
      if (outcome === undefined) {
        evaluated.push(i);
        runs.push(joinEntries(NOTHING, run, NOTHING));
        run = [];
      } else if (shape !== undefined) {
        run.push(
          (outcome.id >= 0 ? shaped?.byId[outcome.id] : undefined) ??
            shape.entry(toggles[i], outcome, undefined),
        );
      } else if (!onlyEnabled || outcome.enabled) run.push(outcome.entry);
    }
    runs.push(joinEntries(NOTHING, run, NOTHING));
    const bytes = templateBytes(signature, runs, evaluated.length, usage.length);
    if (!templates.hasRoom) this.forgetTemplate(state);
    if (!this.memory.memo.reserve(bytes)) return;
    templates.set(signature, {
      signature,
      evaluated: Int32Array.from(evaluated),
      runs,
      usage,
      pieceIds: new Int32Array(PIECES * evaluated.length).fill(-1),
      pieces: new Array<Buffer | undefined>(PIECES * evaluated.length).fill(undefined),
      bytes,
    });
    state.memoBytes += bytes;
    state.memoRows += 1;
  }

  /**
   * A toggle the shape writes with the strategy that enabled it (`AnswerShape.entries`' `decided`):
   * evaluated with it (never from the memo), or written by the shape alone when not compiled.
   */
  private decidedEntry(
    fast: FastEvaluation,
    state: RevisionState,
    toggle: CompiledToggle,
    enhanced: Context,
    shape: AnswerShape,
    gathered: Gathered,
    collect: boolean,
  ): Buffer {
    if (toggle.uncompiled) {
      gathered.cacheable = false;
      return shape.uncompiled(toggle);
    }
    const decision = this.decide(fast, state, toggle, enhanced);
    if (decision.outcome.id === FAILED) gathered.cacheable = false;
    else if (collect) gathered.counted.push(decision.outcome);
    return shape.entry(toggle, decision.outcome, decision.decided);
  }

  /**
   * Toggle `i` evaluated (or remembered): from its flat layout when it has one that answers
   * (`compiled/flat.ts`: counted as `evaluateToggle` counts), else by `evaluateToggle`, whose
   * outcome ids the layout then learns; what it gave is noted in `gathered` (counted, or not
   * cacheable when it failed).
   */
  private evaluatedAt(
    fast: FastEvaluation,
    state: RevisionState,
    i: number,
    enhanced: Context,
    window: string | undefined,
    keys: MemoKeys,
    gathered: Gathered,
    collect: boolean,
  ): number | Outcome {
    const { flat, plan } = state;
    const laidOut = flat.has(i);
    if (laidOut) {
      let id = NOT_FLAT;
      try {
        id = flat.outcome(i, state.scope);
      } catch {
        // the toggle's object evaluates it again, and answers the failure as it does
        id = NOT_FLAT;
      }
      if (id >= 0) {
        state.usage.countId(id);
        if (collect) gathered.counted.push(plan.table.list[id]);
        return id;
      }
    }
    const result = this.evaluateToggle(fast, state, plan.toggles[i], enhanced, window, keys);
    if (laidOut) flat.learn(plan.toggles[i]);
    if (typeof result === 'number') {
      if (collect) gathered.counted.push(plan.table.list[result]);
    } else if (result.id === FAILED) gathered.cacheable = false;
    else if (collect) gathered.counted.push(result);
    return result;
  }

  /**
   * One toggle: its remembered result for the values of its input fields when it has one, else one
   * evaluation (the engine's, or the SDK's), counted; as the interned outcome's id, or the outcome
   * when it is not interned (`evaluatedOf`). A strategy that throws answers the toggle disabled,
   * not counted (as the SDK does; its outcome's id is `FAILED`), and never fails the other toggles
   * of the request. A toggle that reads the clock (no `currentTime` in the context) is remembered
   * per window of the clock among the dates (`window`). Toggles with the same input fields share
   * one key per request (`keys`).
   */
  private evaluateToggle(
    fast: FastEvaluation,
    state: RevisionState,
    toggle: CompiledToggle,
    enhanced: Context,
    window: string | undefined,
    keys: MemoKeys,
  ): number | Outcome {
    const key = toggle.group < 0 ? undefined : keys.ofGroup(toggle.group);
    if (key !== undefined) {
      const id = keys.rowOf(toggle.group, key)?.[toggle.slot] ?? -1;
      if (id >= 0) {
        state.usage.countId(id);
        return id;
      }
    }
    let evaluated: number | Outcome;
    try {
      evaluated = evaluatedOf(
        toggle,
        toggle.engine
          ? toggle.engine.evaluate(state.scope)
          : toggle.feature === undefined
            ? fast.resolve(toggle.name, toggle.customCode ? ownCopy(enhanced) : enhanced)
            : fast.resolveFeature(toggle.feature, toggle.customCode ? ownCopy(enhanced) : enhanced),
      );
    } catch (err) {
      fast.failed(toggle.name, err);
      return failedOutcome(toggle);
    }
    if (typeof evaluated !== 'number') {
      // not interned: counted as itself, never remembered
      state.usage.count(evaluated);
      return evaluated;
    }
    state.usage.countId(evaluated);
    // kept only when no date passed while evaluating
    if (key === undefined) return evaluated;
    const clocked = toggle.determinism.currentTime && window !== undefined;
    if (!clocked || clockWindow(state.plan.dateBoundaries, Date.now()) === window)
      this.remember(state, toggle, key, evaluated, keys);
    return evaluated;
  }

  /**
   * Keeps one result within the memo budget, in its group's row for the key (a row is made, and
   * counted whole, for the first result of a key). The budget is the app's, shared by every
   * evaluator: over it, the evaluators give up a row each in turn, each the oldest row of one group
   * after another (round robin), until the new one fits: eviction costs what insertion does,
   * so a stream of new input values never clears every memo at once (a pause, and a burst of
   * evaluations after it).
   */
  private remember(
    state: RevisionState,
    toggle: CompiledToggle,
    key: string,
    /** An interned outcome's id. */
    id: number,
    keys: MemoKeys,
  ): void {
    const group = state.plan.groups[toggle.group];
    let row = group.memo.get(key);
    if (row === undefined) {
      const bytes = rowBytes(key, group);
      // room made by forgetting the oldest rows of this revision's and other evaluators' memos in turn
      if (this.closed || state !== this.state || !this.memory.memo.reserve(bytes)) return;
      row = new Int32Array(group.size).fill(-1);
      group.memo.set(key, row);
      state.memoBytes += bytes;
      state.memoRows += 1;
      keys.keepRow(toggle.group, row);
    }
    row[toggle.slot] = id;
  }

  /** Forgets the revision's oldest answer template; false when it keeps none. */
  private forgetTemplate(state: RevisionState): boolean {
    const bytes = state.templates.forgetOldest();
    if (bytes === 0) return false;
    state.memoBytes -= bytes;
    state.memoRows -= 1;
    this.memory.memo.release(bytes);
    return true;
  }

  /** Forgets the oldest row of the next group that has one, or the oldest template; false when there is none. */
  private forgetOne(state: RevisionState): boolean {
    const groups = state.plan.groups;
    // the groups in turn, then the templates
    for (let seen = 0; seen <= groups.length; seen++) {
      const at = state.evictAt;
      state.evictAt = (state.evictAt + 1) % (groups.length + 1);
      if (at === groups.length) {
        if (this.forgetTemplate(state)) return true;
        continue;
      }
      const group = groups[at];
      const oldest = group.memo.keys().next();
      if (!oldest.done) {
        group.memo.delete(oldest.value);
        const bytes = rowBytes(oldest.value, group);
        state.memoBytes -= bytes;
        state.memoRows -= 1;
        this.memory.memo.release(bytes);
        return true;
      }
    }
    return false;
  }

  /** `toggle` on the reference path (someone listens to the SDK's impression events). */
  private plainToggle(name: string, context: Context): Pick<Outcome, 'enabled' | 'entry'> | undefined {
    const feature = this.features.toggle(name);
    if (!feature) return undefined;
    const impressionData = feature.impressionData === true;
    const result = this.features.evaluate(name, ownCopy(context));
    const toggle = result
      ? toEvaluatedToggle(name, impressionData, result)
      : disabledToggle(name, impressionData);
    return { enabled: toggle.enabled, entry: toggleEntry(toggle) };
  }

  /** The reference path, while the SDK's full evaluation must run (someone listens to its impression events). */
  private plainBody(selection: Selection, context: Context): string {
    const known = new Set(this.features.toggles().map((f) => f.name));
    // `evaluate` answers a quarantined toggle undefined without calling the SDK: disabled below.
    const names =
      selection.kind === 'named' ? unique(selection.names) : this.features.toggles().map((f) => f.name);
    const toggles: EvaluatedToggle[] = [];
    for (const name of names) {
      if (!known.has(name)) {
        toggles.push(disabledToggle(name, false));
        continue;
      }
      const impressionData = this.features.toggle(name)?.impressionData === true;
      const result = this.features.evaluate(name, ownCopy(context));
      const toggle = result
        ? toEvaluatedToggle(name, impressionData, result)
        : disabledToggle(name, impressionData);
      if (selection.kind !== 'enabled' || toggle.enabled) toggles.push(toggle);
    }
    return JSON.stringify({ toggles });
  }
}

/** What an answer loop gathers besides its entries. */
interface Gathered {
  /** The entries' total length. */
  bytes: number;
  /** With `collect`, the outcomes counted one by one (to keep the answer with). */
  readonly counted: Outcome[];
  /** False once a toggle failed or was written by its shape alone: such an answer is not kept. */
  cacheable: boolean;
}

/**
 * Adds toggle `i`'s entry for its outcome (the interned outcome `id`, or `outcome` when not
 * interned) to `entries`: with a shape, the shape's entry (read by id when made before); else
 * `/proxy`'s, unless only enabled toggles are listed and it is disabled.
 */
function putEntry(
  entries: Buffer[],
  gathered: Gathered,
  plan: Plan,
  i: number,
  id: number,
  outcome: Outcome | undefined,
  onlyEnabled: boolean,
  shape: AnswerShape | undefined,
  byId: readonly (Buffer | undefined)[] | undefined,
): void {
  const table = plan.table;
  if (shape !== undefined) {
    let entry = outcome === undefined ? byId?.[id] : undefined;
    entry ??= shape.entry(plan.toggles[i], outcome ?? table.list[id], undefined);
    entries.push(entry);
    gathered.bytes += entry.length;
  } else if (outcome === undefined) {
    if (!onlyEnabled || table.enabled[id] === 1) {
      entries.push(table.entries[id]);
      gathered.bytes += table.sizes[id];
    }
  } else if (!onlyEnabled || outcome.enabled) {
    entries.push(outcome.entry);
    gathered.bytes += outcome.entry.length;
  }
}

/** An evaluation's result (`Evaluator.evaluateToggle`) as an outcome object. */
function asOutcome(plan: Plan, evaluated: number | Outcome): Outcome {
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

function unique(names: readonly string[]): string[] {
  return [...new Set(names)];
}
