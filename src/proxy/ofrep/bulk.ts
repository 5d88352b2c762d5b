import type { Context } from 'unleash-client';
import type { FeatureInterface, StrategyTransportInterface } from '../upstream/sdk/types';
import { detailsFor, reasonOf, type EvaluationReason } from '../engine/details';
import {
  FAILED,
  type AnswerShape,
  type ShapeEntries,
  type Evaluator,
  type Prepared,
  type ShapedAnswer,
} from '../engine/evaluator';
import type { CompiledToggle } from '../engine/compiled-toggle';
import type { Outcome } from '../engine/outcomes';
import type { Plan } from '../engine/plan';
import type { OutcomeTable } from '../engine/outcome-table';
import type { EvaluatedToggle, FeatureRepository } from '../upstream/feature-repository';
import { flagNotFound, toOfrepResult, type OfrepResult } from './mapping';

/** What OFREP needs of one compiled toggle's definition, worked out once per revision. */
interface ToggleFacts {
  readonly feature: FeatureInterface | undefined;
  /**
   * The reason of an enabled answer (its place in `REASONS`) when it does not depend on which
   * strategy enabled it (the first strategy's for a constant toggle, the one reason every strategy
   * gives otherwise); undefined when it does: such a toggle is evaluated with its deciding strategy
   * on every request.
   */
  readonly enabledReason: number | undefined;
  /**
   * The reason of a disabled and of an enabled answer as `reasonFor` gives it, worked out once from
   * the definition (quarantined, disabled, no strategies, `enabledReason`); `on` is `DECIDED` when
   * the strategy that enabled it says. A request then reads neither the definition nor its strategies.
   */
  readonly off: number;
  readonly on: number;
}

/** `ToggleFacts.on` of a toggle whose enabled reason depends on the strategy that enabled it. */
const DECIDED = -1;

/** Every reason, numbered: an entry's place among its outcome's entries. */
const REASONS: readonly EvaluationReason[] = [
  'DISABLED',
  'DEFAULT',
  'STATIC',
  'TARGETING_MATCH',
  'SPLIT',
  'ERROR',
  'UNKNOWN',
];
const REASON_INDEX = new Map(REASONS.map((reason, i) => [reason, i]));
const indexOf = (reason: EvaluationReason): number => REASON_INDEX.get(reason) ?? REASONS.length - 1;
const [DISABLED, DEFAULT, STATIC, , , ERROR, UNKNOWN] = REASONS.map((_, i) => i);

/**
 * What OFREP keeps of one definitions revision, found from any of its compiled toggles (they share
 * the revision's interned outcomes): the facts of each toggle by `CompiledToggle.index`, and the
 * serialised results of interned outcomes by `Outcome.id` and reason. A request reads arrays, not
 * maps, for each of its flags.
 */
class RevisionEntries {
  readonly facts: (ToggleFacts | undefined)[] = [];
  /**
   * The entry of each interned outcome of a toggle whose reason does not depend on the strategy
   * that enabled it (a function of the outcome alone), by `Outcome.id`: what the bulk answer's loop
   * reads (`AnswerShape.entries`).
   */
  readonly byId: (Buffer | undefined)[] = [];
  /** By toggle index, 1 when evaluated with the strategy that enabled it (`AnswerShape.entries`); made by `decidedOf`. */
  private decided: Uint8Array | undefined;
  private readonly entries: (Buffer | undefined)[] = [];
  /** Outcomes not interned (`id` < 0): a toggle's 33rd variant, a failed evaluation. */
  private readonly loose = new WeakMap<Outcome, Map<number, Buffer>>();

  factsOf(features: FeatureRepository, toggle: CompiledToggle): ToggleFacts {
    let facts = this.facts[toggle.index];
    if (facts === undefined) {
      const feature = features.toggle(toggle.name);
      const reason = feature === undefined ? undefined : enabledReason(toggle, feature);
      const enabled = reason === undefined ? undefined : indexOf(reason);
      const fixed = toggle.quarantined ? ERROR : !feature?.enabled ? DISABLED : undefined;
      facts = {
        feature,
        enabledReason: enabled,
        off: fixed ?? DEFAULT,
        on: fixed ?? (!feature?.strategies?.length ? STATIC : (enabled ?? DECIDED)),
      };
      this.facts[toggle.index] = facts;
    }
    return facts;
  }

  /** Which toggles of the plan are evaluated with the strategy that enabled it (`AnswerShape.entries`). */
  decidedOf(features: FeatureRepository, plan: Plan): Uint8Array {
    if (this.decided === undefined) {
      const decided = new Uint8Array(plan.toggles.length);
      for (const toggle of plan.toggles)
        if (toggle.constant === undefined && isDecided(this.factsOf(features, toggle), toggle))
          decided[toggle.index] = 1;
      this.decided = decided;
    }
    return this.decided;
  }

  /** One flag's OFREP result as bytes, made once per outcome and reason (its place in `REASONS`). */
  entryOf(feature: FeatureInterface, outcome: Outcome, reason: number): Buffer {
    if (outcome.id >= 0) {
      const at = outcome.id * REASONS.length + reason;
      return (this.entries[at] ??= serialise(feature, outcome, REASONS[reason]));
    }
    let byReason = this.loose.get(outcome);
    if (byReason === undefined) {
      byReason = new Map();
      this.loose.set(outcome, byReason);
    }
    let entry = byReason.get(reason);
    if (entry === undefined) {
      entry = serialise(feature, outcome, REASONS[reason]);
      byReason.set(reason, entry);
    }
    return entry;
  }
}

// Keyed by the revision's interned outcomes: they go with it.
const revisions = new WeakMap<OutcomeTable, RevisionEntries>();

function revisionOf(table: OutcomeTable): RevisionEntries {
  let revision = revisions.get(table);
  if (revision === undefined) {
    revision = new RevisionEntries();
    revisions.set(table, revision);
  }
  return revision;
}

/** The HTTP status of a single flag's serialised result, for those that are failures (an `errorCode`); 200 otherwise. */
const failureStatus = new WeakMap<Buffer, number>();

/** The outcome's entry is the JSON of the evaluated toggle: reading it back gives that toggle. */
function serialise(feature: FeatureInterface, outcome: Outcome, reason: EvaluationReason): Buffer {
  const toggle = JSON.parse(outcome.entry.toString('utf8')) as EvaluatedToggle;
  const result = toOfrepResult({ toggle, feature, reason });
  return bytesOf(result);
}

function enabledReason(toggle: CompiledToggle, feature: FeatureInterface): EvaluationReason | undefined {
  const strategies = Array.isArray(feature.strategies) ? feature.strategies : [];
  if (strategies.length === 0) return 'STATIC';
  // a constant enabled toggle is enabled by its first strategy: the SDK stops there
  if (toggle.constant) return reasonOf(strategies[0], feature);
  const reasons = new Set(strategies.map((s) => reasonOf(s, feature)));
  return reasons.size === 1 ? [...reasons][0] : undefined;
}

/**
 * The reason of one answer (its place in `REASONS`), as `details.ts` gives it for a fresh evaluation:
 * an error for a failed evaluation, else what the definition says for a disabled or an enabled
 * answer (`ToggleFacts.off`, `on`), else the strategy that enabled it.
 */
function reasonFor(
  facts: ToggleFacts,
  feature: FeatureInterface,
  outcome: Outcome,
  decided: StrategyTransportInterface | undefined,
): number {
  if (outcome.id === FAILED) return ERROR;
  if (!outcome.enabled) return facts.off;
  if (facts.on !== DECIDED) return facts.on;
  return decided ? indexOf(reasonOf(decided, feature)) : UNKNOWN;
}

/** An OFREP result as bytes; a failure's status (`statusOf`) noted for a single flag's answer. */
function bytesOf(result: OfrepResult): Buffer {
  const bytes = Buffer.from(JSON.stringify(result));
  const status = statusOf(result);
  if (status !== 200) failureStatus.set(bytes, status);
  return bytes;
}

/** An OFREP result as bytes, with the status a single flag answers it with. */
interface FlagEntry {
  readonly body: Buffer;
  readonly status: number;
}

/**
 * A toggle OFREP evaluates with the strategy that enabled it (its enabled reason depends on that
 * strategy), or answers through `details.ts` (not compiled, or no definition to reason from).
 */
function isDecided(facts: ToggleFacts, toggle: CompiledToggle): boolean {
  return toggle.uncompiled || facts.enabledReason === undefined;
}

/**
 * OFREP's flags as the answer loop writes them (`Evaluator.everyToggle`, `AnswerShape`): each
 * result serialised once per outcome and reason, with the strategy that enabled it when its reason
 * depends on it; an uncompiled toggle, or one without a definition, through `details.ts`.
 */
class OfrepShape implements AnswerShape {
  readonly kind = 'ofrep';
  private single: ReturnType<typeof detailsFor> | undefined;

  constructor(
    private readonly features: FeatureRepository,
    private readonly context: Context,
  ) {}

  entries(plan: Plan): ShapeEntries {
    const revision = revisionOf(plan.table);
    return { byId: revision.byId, decided: revision.decidedOf(this.features, plan) };
  }

  entry(toggle: CompiledToggle, outcome: Outcome, decided: StrategyTransportInterface | undefined): Buffer {
    const revision = revisionOf(toggle.interned);
    const facts = revision.factsOf(this.features, toggle);
    const { feature } = facts;
    if (feature === undefined) return this.uncompiled(toggle);
    const entry = revision.entryOf(feature, outcome, reasonFor(facts, feature, outcome, decided));
    // the same bytes for every answer of this outcome: kept for the loop to read by id
    if (outcome.id >= 0 && !isDecided(facts, toggle)) revision.byId[outcome.id] = entry;
    return entry;
  }

  uncompiled(toggle: CompiledToggle): Buffer {
    this.single ??= detailsFor(this.features, this.context);
    const details = this.single(toggle.name);
    return bytesOf(details ? toOfrepResult(details) : flagNotFound(toggle.name));
  }
}

/**
 * The entries of the `flags` array of OFREP's bulk answer, as bytes to be joined with commas, and
 * their total length: every toggle through the answer loop of `/proxy` (`Evaluator.everyToggle`:
 * its plan, constants, memo, interned outcomes and usage counts), or, for a pure answer kept under
 * `key` (its derived ETag), one piece with all of them. Undefined when the SDK's full evaluation
 * must run.
 */
export function bulkFlags(
  features: FeatureRepository,
  evaluator: Evaluator,
  prepared: Prepared,
  context: Context,
  key: string | undefined,
): ShapedAnswer | undefined {
  const answer = evaluator.everyToggle(prepared, key, new OfrepShape(features, context));
  return answer === false ? undefined : answer;
}

/**
 * One flag's OFREP result as bytes, through the same plan, outcomes and serialised entries as the
 * bulk answer (`Evaluator.one`), with its HTTP status (500 for a flag whose evaluation failed);
 * undefined for a name the definitions lack or while the SDK's full evaluation must run (the
 * caller answers through `details.ts`).
 */
export function singleFlag(
  features: FeatureRepository,
  evaluator: Evaluator,
  prepared: Prepared,
  context: Context,
  name: string,
): FlagEntry | undefined {
  const answer = evaluator.one(prepared, name, new OfrepShape(features, context));
  if (answer === undefined) return undefined;
  return { body: answer, status: failureStatus.get(answer) ?? 200 };
}

/** The status of a single flag's result: 404 for a flag not found, 500 for another failure. */
export function statusOf(result: OfrepResult): number {
  return 'errorCode' in result ? (result.errorCode === 'FLAG_NOT_FOUND' ? 404 : 500) : 200;
}
