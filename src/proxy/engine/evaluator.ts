import type { Context } from 'unleash-client';
import { etagMatches } from '../../common/http/etag';
import type { Logger } from '../../common/logging/logger';
import { RateLimitedLog } from '../../common/logging/rate-limited-log';
import { canonicalContext } from '../context/canonical-context';
import type { FastEvaluation, FeatureRepository } from '../upstream/feature-repository';
import { answerLoop, type AnswerOrder } from './answer-loop';
import { AnswerPass, asOutcome } from './answer-pass';
import { BodyForms } from './body-forms';
import { clockWindow, combine, isDeterministic, type Determinism } from './determinism';
import { bodyEtag, derivedEtag } from './etag';
import { EvaluationMemory } from './evaluation-memory';
import { QUARANTINED, type Outcome } from './outcomes';
import { compilePlan, type Plan } from './plan';
import { referenceBody, referenceToggle, uniqueNames } from './reference-path';
import type { AnswerShape, Prepared, Reply, Selection, ShapedAnswer } from './requests';
import { keptBytes, Revision } from './revision';
import { joinEntries, toggleListBody } from './toggle-json';

export type { AnswerShape, Prepared, Reply, Selection, ShapeEntries, ShapedAnswer } from './requests';
export { FAILED } from './requests';
export { DEFAULT_BUDGETS, type EvaluationBudgets } from './evaluation-memory';

const NO_NAMES: readonly string[] = Object.freeze([]);
const ALL: Selection = Object.freeze({ kind: 'all' });
const NOTHING = Buffer.alloc(0);

/**
 * Answers a selection of toggles for one context: one SDK evaluation per toggle per request, except
 * where the answer is proven to be the one that evaluation would give. Pure answers (see
 * `determinism.ts`) get a derived ETag, so a matching `If-None-Match` costs no evaluation at all.
 *
 * The façade of the engine: a definitions revision's state is a `Revision` (`revision.ts`), one
 * request's walk over it an `AnswerPass` (`answer-pass.ts`: per toggle, the memo, the engine or the
 * SDK), the loop of an answer listing toggles `answerLoop` (`answer-loop.ts`, with its templates in
 * `template-pass.ts`), and the SDK's reference path `reference-path.ts`.
 */
export class Evaluator {
  private state: Revision | undefined;
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
      if (fast) this.revisionOf(fast);
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
    const { plan } = this.revisionOf(fast);
    const enhanced = fast.enhance(context);
    let determinism: Determinism = plan.determinism;
    let selectionKey: string = selection.kind;
    if (selection.kind === 'named') {
      const names = uniqueNames(selection.names);
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
      return this.withBodyEtag(referenceBody(this.features, fresh.selection, fresh.context), ifNoneMatch);
    const revision = this.revisionOf(fast);
    const { etag, selection, window } = fresh;
    const order = orderOf(revision.plan, selection);
    if (etag === undefined) {
      const pass = this.pass(fast, revision, fresh, false);
      const { body, release } = this.evaluate(pass, selection, order);
      return this.withBodyEtag(body, ifNoneMatch, release);
    }
    if (etagMatches(ifNoneMatch, etag)) return { notModified: true, etag };
    const cached = revision.cache.get(etag);
    if (cached) {
      revision.usage.countAnswer(cached.usage);
      return { notModified: false, body: cached.body, etag, forms: cached.forms };
    }
    // Kept only on its second sighting: a first one (a new user) collects no usage list to keep.
    const keep = revision.cache.admit(etag);
    const { body, usage, release } = this.evaluate(this.pass(fast, revision, fresh, keep), selection, order);
    // A date passed while evaluating: this body belongs to no single window, validate it by itself.
    if (window !== undefined && clockWindow(revision.plan.dateBoundaries, Date.now()) !== window)
      return this.withBodyEtag(body, undefined, release);
    if (usage === undefined) return { notModified: false, body, etag, release };
    const cache = revision.cache;
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
    if (!fast || fresh.revision === -1) return referenceToggle(this.features, name, fresh.context);
    const revision = this.revisionOf(fast);
    const toggle = revision.plan.byName.get(name);
    if (toggle === undefined) return undefined;
    const constant = toggle.constant;
    if (constant) {
      if (constant.id !== QUARANTINED) revision.usage.count(constant);
      return constant;
    }
    const pass = this.pass(fast, revision, fresh, false);
    return asOutcome(revision.plan, pass.toggle(toggle));
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
    const revision = this.revisionOf(fast);
    // `key` is the caller's for `prepared`: kept answers only while that is still current
    const pure = key !== undefined && fresh === prepared && fresh.etag !== undefined;
    if (pure) {
      const kept = revision.cache.get(key);
      if (kept) {
        revision.usage.countAnswer(kept.usage);
        return { entries: [kept.body], bytes: kept.body.length };
      }
    }
    const collect = pure && revision.cache.admit(key);
    const entries: Buffer[] = [];
    const { window } = fresh;
    const pass = this.pass(fast, revision, fresh, collect, shape);
    const { bytes, usage } = answerLoop(entries, pass, ALL, {
      indices: revision.plan.steps.all,
      unknown: NO_NAMES,
    });
    if (
      usage === undefined ||
      (window !== undefined && clockWindow(revision.plan.dateBoundaries, Date.now()) !== window)
    )
      return { entries, bytes };
    const body = joinEntries(NOTHING, entries, NOTHING, undefined, bytes);
    revision.cache.set(key as string, { body, usage }, keptBytes(body, usage));
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
    const revision = this.revisionOf(fast);
    const toggle = revision.plan.byName.get(name);
    if (toggle === undefined) return undefined;
    const pass = this.pass(fast, revision, fresh, false, shape);
    if (toggle.constant) {
      if (toggle.constant.id !== QUARANTINED) revision.usage.count(toggle.constant);
      return shape.entry(toggle, toggle.constant, undefined);
    }
    if (toggle.uncompiled) return shape.uncompiled(toggle);
    if (pass.isDecided(toggle.index)) {
      const { outcome, decided } = pass.decide(toggle);
      return shape.entry(toggle, outcome, decided);
    }
    return shape.entry(toggle, asOutcome(revision.plan, pass.toggle(toggle)), undefined);
  }

  /**
   * Hands pending usage over and gives this evaluator's memory back to the app's budgets (a
   * dropped project view). A request still in flight is answered, without keeping anything.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.state?.usage.flush();
    this.state?.retire();
    this.state = undefined;
  }

  /**
   * One request's walk over `revision` for inputs prepared against it. Inputs prepared for every
   * toggle with a derived ETag passed every toggle's determinism (`Plan.determinism`, the union of
   * theirs): the pass does not check it again per memo group.
   */
  private pass(
    fast: FastEvaluation,
    revision: Revision,
    prepared: Prepared,
    collect: boolean,
    shape?: AnswerShape,
  ): AnswerPass {
    return new AnswerPass(
      fast,
      revision,
      prepared.enhanced,
      prepared.window,
      this.memory.budgets.memoKeyMaxLength,
      collect,
      prepared.etag !== undefined && prepared.selection.kind !== 'named',
      shape,
    );
  }

  /**
   * Evaluates the selection (each toggle once, counted) and serialises it as `/proxy`'s toggle
   * list; when the pass collects, also the list of what it counted (to keep the answer with),
   * undefined when a toggle failed.
   */
  private evaluate(
    pass: AnswerPass,
    selection: Selection,
    order: AnswerOrder,
  ): { body: Buffer; usage: readonly Outcome[] | undefined; release: (() => void) | undefined } {
    // the answer is written before this returns: one list of entries serves every request (a
    // custom strategy's code runs within; should it ever answer through here, it gets its own)
    const shared = !this.writing;
    const entries = shared ? this.entries : [];
    this.writing = true;
    try {
      const { bytes, usage } = answerLoop(entries, pass, selection, order);
      if (pass.collect) return { body: toggleListBody(entries, bytes), usage, release: undefined };
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

  private withBodyEtag(body: string | Buffer, ifNoneMatch: string | undefined, release?: () => void): Reply {
    const etag = bodyEtag(body);
    if (!etagMatches(ifNoneMatch, etag)) return { notModified: false, body, etag, release };
    release?.();
    return { notModified: true, etag };
  }

  /** The current definitions' revision, compiled (and the one before retired) when they changed. */
  private revisionOf(fast: FastEvaluation): Revision {
    const revision = this.features.revision;
    if (this.state?.plan.revision === revision) return this.state;
    const plan = compilePlan({
      revision,
      features: this.features,
      fast,
      // everything its answers depend on: for a project view, parents in other projects too
      definitions: () => this.features.answerDefinitions(),
      onCompileError: (name, err) =>
        this.failures.error(
          `compiling toggle "${name}" failed; the SDK evaluates it alone: ${String(err)}`,
          name,
        ),
    });
    // The replaced revision's counts go first: they are counts all the same.
    this.state?.usage.flush();
    this.state?.retire();
    const state = new Revision(plan, this.features, this.memory, this.closed);
    if (plan.sdkEvaluated.length > 0)
      this.logger.debug(
        `the SDK evaluates ${plan.sdkEvaluated.length} toggle(s) the engine does not compile (custom strategies or definitions it does not know): ${plan.sdkEvaluated.slice(0, 20).join(', ')}${plan.sdkEvaluated.length > 20 ? ', …' : ''}`,
      );
    this.state = state;
    return state;
  }
}

/** The toggles a selection lists, in answer order (`AnswerOrder`). */
function orderOf(plan: Plan, selection: Selection): AnswerOrder {
  if (selection.kind !== 'named') return { indices: plan.steps.all, unknown: NO_NAMES };
  const unknown: string[] = [];
  const indices = uniqueNames(selection.names).map((n) => {
    const toggle = plan.byName.get(n);
    if (toggle) return toggle.index;
    unknown.push(n);
    return -unknown.length;
  });
  return { indices, unknown };
}
