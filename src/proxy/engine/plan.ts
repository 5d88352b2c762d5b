import type { FeatureInterface } from '../upstream/sdk/types';
import type { FastEvaluation, FeatureRepository } from '../upstream/feature-repository';
import { compileToggle, type RevisionParts } from './compile-toggle';
import {
  quarantinedToggle,
  uncompiledToggle,
  type CompiledToggle,
  type ToggleInMaking,
} from './compiled-toggle';
import { Checks } from './compiled/checks';
import { combine, dateBoundaries, type Determinism } from './determinism';
import { definitionsDigest } from './etag';
import { MemoGroups, type MemoGroup } from './memo-groups';
import { OutcomeTable } from './outcome-table';
import type { Outcome } from './outcomes';
import { ToggleSteps } from './toggle-steps';

/** Every toggle of one definitions revision, compiled once when the revision is accepted. */
export interface Plan {
  readonly revision: number;
  /**
   * Digest of the definitions its answers depend on (`FeatureRepository.answerDefinitions`): the
   * part of every derived ETag that changes with them. For a project view that is its toggles, the
   * parents they depend on in other projects and the segments of both, not the whole environment:
   * a change elsewhere keeps its validators (no needless 200s), a change of a parent elsewhere
   * changes them (no stale 304).
   */
  readonly digest: string;
  readonly toggles: readonly CompiledToggle[];
  readonly byName: ReadonlyMap<string, CompiledToggle>;
  /** What a context needs for an answer listing every toggle to be pure. */
  readonly determinism: Determinism;
  /** Dates of every date constraint, sorted: the clock matters only as its window among them. */
  readonly dateBoundaries: readonly number[];
  /** Every interned outcome of the revision, by `Outcome.id` (grows as outcomes are seen, bounded per toggle). */
  readonly outcomes: readonly Outcome[];
  /** The same outcomes with what the answer loop reads of them in typed arrays. */
  readonly table: OutcomeTable;
  /** What the answer loop reads of each toggle, in typed arrays. */
  readonly steps: ToggleSteps;
  /** The memo groups of the revision, by `CompiledToggle.group`. */
  readonly groups: readonly MemoGroup[];
  /** How many distinct constraint checks the engine's toggles have: the size of a request's scope. */
  readonly checks: number;
  /** Toggles evaluated by the SDK on every evaluation (not constant, not quarantined, not compiled by the engine), by name. */
  readonly sdkEvaluated: readonly string[];
}

/** What a plan is compiled from. */
export interface PlanSource {
  readonly revision: number;
  /** The revision's toggles, with their faults and irregular shapes (`upstream/toggle-faults.ts`). */
  readonly features: FeatureRepository;
  readonly fast: FastEvaluation;
  /** Everything the answers depend on (for a project view, parents in other projects too): digested once. */
  readonly definitions: () => unknown;
  /** Told about a toggle whose compilation threw: the SDK evaluates it alone. */
  readonly onCompileError: (name: string, err: unknown) => void;
}

/**
 * Compiles one definitions revision. A quarantined toggle is answered disabled without evaluating;
 * an irregular one (types this code does not rely on) and one that cannot be compiled are
 * evaluated by the SDK alone on every request: none of them takes the other toggles, or the
 * process, down.
 */
export function compilePlan(source: PlanSource): Plan {
  const { features, fast } = source;
  const parts: RevisionParts = {
    fast,
    outcomes: new OutcomeTable(),
    memo: new MemoGroups(),
    checks: new Checks(),
  };
  // The compiled toggles and their parents (of any project): the clock matters at their dates.
  const regular = new Set<FeatureInterface>();
  const compileOne = (feature: FeatureInterface): ToggleInMaking => {
    if (features.fault(feature.name)) return quarantinedToggle(feature, parts.outcomes);
    if (features.isIrregular(feature.name)) return uncompiledToggle(feature, parts.outcomes);
    try {
      const { toggle, reads } = compileToggle(feature, parts);
      for (const f of reads) regular.add(f);
      return toggle;
    } catch (err) {
      source.onCompileError(feature.name, err);
      return uncompiledToggle(feature, parts.outcomes);
    }
  };
  const toggles = features.toggles().map((feature, index) => {
    const toggle = compileOne(feature);
    toggle.index = index;
    return toggle;
  });
  return {
    revision: source.revision,
    digest: definitionsDigest(source.definitions()),
    toggles,
    byName: new Map(toggles.map((t) => [t.name, t])),
    determinism: combine(toggles.map((t) => t.determinism)),
    dateBoundaries: dateBoundaries([...regular], fast),
    outcomes: parts.outcomes.list,
    table: parts.outcomes,
    steps: new ToggleSteps(toggles),
    groups: parts.memo.list,
    checks: parts.checks.size,
    sdkEvaluated: toggles.filter((t) => !t.constant && !t.engine).map((t) => t.name),
  };
}
