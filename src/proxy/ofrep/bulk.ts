import type { Context } from 'unleash-client';
import type { FeatureInterface } from 'unleash-client/lib/feature';
import type { StrategyTransportInterface } from 'unleash-client/lib/strategy';
import { detailsFor, reasonOf, type EvaluationReason } from '../evaluation/details';
import { FAILED, type Evaluator, type Prepared } from '../evaluation/evaluator';
import type { CompiledToggle, Outcome } from '../evaluation/plan';
import type { EvaluatedToggle, FeatureRepository } from '../upstream/feature-repository';
import { flagNotFound, toOfrepResult, type OfrepResult } from './mapping';

/** What OFREP needs of one compiled toggle's definition, worked out once per revision. */
interface ToggleFacts {
  readonly feature: FeatureInterface | undefined;
  /**
   * The reason of an enabled answer when it does not depend on which strategy enabled it (the
   * first strategy's for a constant toggle, the one reason every strategy gives otherwise);
   * undefined when it does: such a toggle is evaluated with its deciding strategy on every request.
   */
  readonly enabledReason: EvaluationReason | undefined;
}

// Keyed by objects of one revision (its compiled toggles and interned outcomes): they go with it.
const factsByToggle = new WeakMap<CompiledToggle, ToggleFacts>();
const entriesByOutcome = new WeakMap<Outcome, Map<EvaluationReason, Buffer>>();

function factsOf(features: FeatureRepository, toggle: CompiledToggle): ToggleFacts {
  let facts = factsByToggle.get(toggle);
  if (facts === undefined) {
    const feature = features.toggle(toggle.name);
    facts = { feature, enabledReason: feature === undefined ? undefined : enabledReason(toggle, feature) };
    factsByToggle.set(toggle, facts);
  }
  return facts;
}

function enabledReason(toggle: CompiledToggle, feature: FeatureInterface): EvaluationReason | undefined {
  const strategies = Array.isArray(feature.strategies) ? feature.strategies : [];
  if (strategies.length === 0) return 'STATIC';
  // a constant enabled toggle is enabled by its first strategy: the SDK stops there
  if (toggle.constant) return reasonOf(strategies[0], feature);
  const reasons = new Set(strategies.map((s) => reasonOf(s, feature)));
  return reasons.size === 1 ? [...reasons][0] : undefined;
}

/** The reason of one answer, as `details.ts` gives it for a fresh evaluation. */
function reasonFor(
  toggle: CompiledToggle,
  feature: FeatureInterface,
  facts: ToggleFacts,
  outcome: Outcome,
  decided: StrategyTransportInterface | undefined,
): EvaluationReason {
  if (toggle.quarantined || outcome.id === FAILED) return 'ERROR';
  if (!feature.enabled) return 'DISABLED';
  if (!outcome.enabled) return 'DEFAULT';
  if (!feature.strategies?.length) return 'STATIC';
  if (facts.enabledReason !== undefined) return facts.enabledReason;
  return decided ? reasonOf(decided, feature) : 'UNKNOWN';
}

const bytesOf = (result: OfrepResult): Buffer => Buffer.from(JSON.stringify(result));

/** One flag's OFREP result as bytes, made once per outcome and reason. */
function entryOf(feature: FeatureInterface, outcome: Outcome, reason: EvaluationReason): Buffer {
  let byReason = entriesByOutcome.get(outcome);
  if (byReason === undefined) {
    byReason = new Map();
    entriesByOutcome.set(outcome, byReason);
  }
  let entry = byReason.get(reason);
  if (entry === undefined) {
    // the outcome's entry is the JSON of the evaluated toggle: reading it back gives that toggle
    const toggle = JSON.parse(outcome.entry.toString('utf8')) as EvaluatedToggle;
    entry = bytesOf(toOfrepResult({ toggle, feature, reason }));
    byReason.set(reason, entry);
  }
  return entry;
}

/**
 * The entries of the `flags` array of OFREP's bulk answer, as bytes: every toggle through the evaluator of `/proxy`
 * (`Evaluator.each`: its plan, constants, memo, interned outcomes and usage counts), each result
 * serialised once per outcome and reason. A toggle whose reason depends on the strategy that
 * enabled it is evaluated with that strategy; an uncompiled one goes through `details.ts` as a
 * single flag does. Undefined when the SDK's full evaluation must run.
 */
export function bulkFlags(
  features: FeatureRepository,
  evaluator: Evaluator,
  prepared: Prepared,
  context: Context,
): Buffer[] | undefined {
  const entries: Buffer[] = [];
  let single: ReturnType<typeof detailsFor> | undefined;
  const handled = evaluator.each(
    prepared,
    (toggle) => factsOf(features, toggle).enabledReason === undefined,
    (toggle, outcome, decided) => {
      const facts = factsOf(features, toggle);
      const { feature } = facts;
      if (outcome === undefined || feature === undefined) {
        single ??= detailsFor(features, context);
        const details = single(toggle.name);
        entries.push(bytesOf(details ? toOfrepResult(details) : flagNotFound(toggle.name)));
        return;
      }
      entries.push(entryOf(feature, outcome, reasonFor(toggle, feature, facts, outcome, decided)));
    },
  );
  return handled ? entries : undefined;
}
