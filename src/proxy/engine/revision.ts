import type { BudgetMember } from '../budgets/shared-budget';
import type { FeatureRepository } from '../upstream/feature-repository';
import { AnswerCache } from './answer-cache';
import { AnswerTemplates, OutcomePlaces, type AnswerTemplate } from './answer-templates';
import type { BodyForms } from './body-forms';
import { FlatToggles } from './compiled/flat';
import { RequestScope } from './compiled/scope';
import type { EvaluationMemory } from './evaluation-memory';
import { LastKeys, rowBytes, type MemoKeys } from './memo-keys';
import type { CompiledToggle } from './compiled-toggle';
import type { Outcome } from './outcomes';
import type { Plan } from './plan';
import { joinEntries } from './toggle-json';
import { UsageTally } from './usage-tally';

/** A kept answer: its bytes and the usage it counts whenever it is served. */
export interface CachedAnswer {
  readonly body: Buffer;
  /** Its other forms (compressed bytes), kept with it; absent for OFREP's flags, joined with more per request. */
  readonly forms?: BodyForms;
  /** The outcomes it counts, once each, whenever it is served. */
  readonly usage: readonly Outcome[];
}

/** What a kept answer costs the answer budget: its bytes, its usage list, the entry itself. */
export const keptBytes = (body: Buffer, usage: readonly Outcome[]): number =>
  body.length + 8 * usage.length + 160;

/** The budget of a closed evaluator's caches: nothing is kept. */
const NOTHING_KEPT = { maxBytes: 0, maxEntries: 0, maxSeen: 1 };

const NOTHING = Buffer.alloc(0);

/**
 * What lives and dies with one definitions revision of an evaluator: its compiled plan, its kept
 * answers, its usage tally, what the engine shares within a request, and its share of the app's
 * memo budget (memo rows and answer templates). Once retired (replaced by a newer revision, or its
 * evaluator closed) it keeps nothing more and has given its memory back.
 */
export class Revision {
  /** Outcomes of every context-independent toggle, counted as one answer per request listing all toggles. */
  readonly constants: readonly Outcome[];
  readonly cache: AnswerCache<CachedAnswer>;
  readonly usage: UsageTally;
  /** What the engine's compiled toggles share within one request (`compiled/scope.ts`). */
  readonly scope: RequestScope;
  /** The compiled toggles the answer loop evaluates from typed arrays (`compiled/flat.ts`). */
  readonly flat: FlatToggles;
  /** The answers' user-independent parts (`answer-templates.ts`), held in the memo budget with the rows. */
  readonly templates = new AnswerTemplates();
  /** The places of interned outcomes among their toggle's, which name the templates' pieces. */
  readonly places: OutcomePlaces;
  /** Each memo group's key of the request before, found again by its values (`LastKeys`). */
  readonly lastKeys: LastKeys;
  /** Bytes and items this revision holds in the memo budget: its memo rows and its answer templates. */
  private memoBytes = 0;
  private memoRows = 0;
  /**
   * The memo group that gives up its oldest row next when the budget is reached; the templates'
   * turn when it equals the number of groups.
   */
  private evictAt = 0;
  /** This revision's memo as a holder of the app's memo budget. */
  private readonly memoMember: BudgetMember = { evictOne: () => this.forgetOne() };
  private isRetired: boolean;

  constructor(
    readonly plan: Plan,
    features: FeatureRepository,
    private readonly memory: EvaluationMemory,
    /** A closed evaluator's revision (a dropped view answering a request in flight) keeps nothing. */
    keepsNothing: boolean,
  ) {
    this.constants = plan.toggles.flatMap((t) => (t.constant && !t.quarantined ? t.constant : []));
    this.usage = new UsageTally(plan.outcomes, (name, enabled, variant, times) =>
      features.addUsage(name, enabled, variant, times),
    );
    this.cache = new AnswerCache(keepsNothing ? NOTHING_KEPT : memory.answers);
    this.scope = new RequestScope(plan.checks);
    this.flat = new FlatToggles(plan.toggles);
    this.places = new OutcomePlaces(plan.toggles.length);
    this.lastKeys = new LastKeys(plan.groups.length);
    this.isRetired = keepsNothing;
    if (!keepsNothing) memory.memo.join(this.memoMember);
  }

  /** True once it keeps nothing more (replaced, or its evaluator closed). */
  get retired(): boolean {
    return this.isRetired;
  }

  /** Gives its answers and memo back to the app's budgets; it keeps nothing from then on. */
  retire(): void {
    this.isRetired = true;
    this.cache.close();
    this.memory.memo.leave(this.memoMember);
    // its rows go with its plan
    this.memory.memo.release(this.memoBytes, this.memoRows);
    this.templates.clear();
    this.memoBytes = 0;
    this.memoRows = 0;
  }

  /**
   * Keeps one result within the memo budget, in its group's row for the key (a row is made, and
   * counted whole, for the first result of a key). The budget is the app's, shared by every
   * evaluator: over it, the evaluators give up a row each in turn, each the oldest row of one group
   * after another (round robin), until the new one fits: eviction costs what insertion does,
   * so a stream of new input values never clears every memo at once (a pause, and a burst of
   * evaluations after it).
   */
  remember(
    toggle: CompiledToggle,
    key: string,
    /** An interned outcome's id. */
    id: number,
    keys: MemoKeys,
  ): void {
    const group = this.plan.groups[toggle.group];
    let row = group.memo.get(key);
    if (row === undefined) {
      const bytes = rowBytes(key, group);
      // room made by forgetting the oldest rows of this revision's and other evaluators' memos in turn
      if (this.isRetired || !this.memory.memo.reserve(bytes)) return;
      row = new Int32Array(group.size).fill(-1);
      group.memo.set(key, row);
      this.memoBytes += bytes;
      this.memoRows += 1;
      keys.keepRow(toggle.group, row);
    }
    row[toggle.slot] = id;
  }

  /** Keeps a template within the memo budget (nothing when it does not fit, or once retired). */
  keepTemplate(template: AnswerTemplate): void {
    if (this.isRetired) return;
    if (!this.templates.hasRoom) this.forgetTemplate();
    if (!this.memory.memo.reserve(template.bytes)) return;
    this.templates.set(template.signature, template);
    this.memoBytes += template.bytes;
    this.memoRows += 1;
  }

  /**
   * Keeps a piece of a template in slot `slot` (the entries and runs one of its units wrote, joined),
   * within the memo budget; nothing when it does not fit or the template went meanwhile.
   */
  keepPiece(template: AnswerTemplate, slot: number, written: readonly Buffer[]): void {
    if (this.isRetired || template.pieces[slot] !== undefined) return;
    const piece = joinEntries(NOTHING, written, NOTHING);
    const bytes = piece.length + 64;
    if (!this.memory.memo.reserveMore(bytes)) return;
    if (this.templates.addPiece(template, slot, piece, bytes)) this.memoBytes += bytes;
    else this.memory.memo.release(bytes, 0);
  }

  /** Forgets the oldest answer template; false when it keeps none. */
  private forgetTemplate(): boolean {
    const bytes = this.templates.forgetOldest();
    if (bytes === 0) return false;
    this.memoBytes -= bytes;
    this.memoRows -= 1;
    this.memory.memo.release(bytes);
    return true;
  }

  /** Forgets the oldest row of the next group that has one, or the oldest template; false when there is none. */
  private forgetOne(): boolean {
    const groups = this.plan.groups;
    // the groups in turn, then the templates
    for (let seen = 0; seen <= groups.length; seen++) {
      const at = this.evictAt;
      this.evictAt = (this.evictAt + 1) % (groups.length + 1);
      if (at === groups.length) {
        if (this.forgetTemplate()) return true;
        continue;
      }
      const group = groups[at];
      const oldest = group.memo.keys().next();
      if (!oldest.done) {
        group.memo.delete(oldest.value);
        const bytes = rowBytes(oldest.value, group);
        this.memoBytes -= bytes;
        this.memoRows -= 1;
        this.memory.memo.release(bytes);
        return true;
      }
    }
    return false;
  }
}
