import type { FeatureInterface } from '../upstream/sdk/types';
import type { FastEvaluation } from '../upstream/feature-repository';
import { DISABLED_ANSWER, ENABLED_ANSWER } from '../upstream/sdk/variant';
import { compiledToggle, type ToggleInMaking } from './compiled-toggle';
import type { Checks } from './compiled/checks';
import { compileFeature, type ToggleEvaluation } from './compiled/toggle';
import { determinismOf } from './determinism';
import { memoInputs, type MemoGroups } from './memo-groups';
import type { OutcomeTable } from './outcome-table';
import { outcomeOf } from './outcomes';

/** What the toggles of one revision share while they are compiled. */
export interface RevisionParts {
  readonly fast: FastEvaluation;
  /** Every interned outcome of the revision. */
  readonly outcomes: OutcomeTable;
  readonly memo: MemoGroups;
  /** The engine's distinct constraint checks of the revision. */
  readonly checks: Checks;
}

/** A compiled toggle, and the definitions its answer reads: itself and the parents it depends on. */
export interface ToggleCompiled {
  readonly toggle: ToggleInMaking;
  readonly reads: readonly FeatureInterface[];
}

const isEmpty = (list: readonly unknown[] | null | undefined) => !list || list.length === 0;

/**
 * True when the SDK's answer for this toggle is the same for every context at every time:
 * - a disabled toggle without dependencies is disabled with the fallback variant;
 * - an enabled toggle without dependencies or variants whose first strategy is the built-in
 *   `default` without constraints, segments or strategy variants (or that has no strategies) is
 *   enabled with the fallback variant: the SDK stops at that first strategy.
 */
function isConstant(feature: FeatureInterface, fast: FastEvaluation): boolean {
  if (!isEmpty(feature.dependencies) || !Array.isArray(feature.strategies)) return false;
  if (feature.enabled === false) return true;
  if (feature.enabled !== true || !isEmpty(feature.variants)) return false;
  const first = feature.strategies[0];
  if (!first) return true;
  return (
    first.name === 'default' &&
    fast.isBuiltInStrategy('default') &&
    isEmpty(first.constraints) &&
    isEmpty(first.segments) &&
    isEmpty(first.variants)
  );
}

/**
 * The parents a toggle depends on, found as the SDK finds them: by name among every toggle of the
 * environment (`FastEvaluation.feature`), so a project view's toggle whose parent is in another
 * project is compiled with what its answer really reads. A missing parent makes the dependency
 * false whatever the context; it appearing later is a change of the view's definitions.
 */
export function parentsOf(feature: FeatureInterface, fast: FastEvaluation): FeatureInterface[] {
  return (Array.isArray(feature.dependencies) ? feature.dependencies : [])
    .map((d) => fast.feature(d.feature))
    .filter((p): p is FeatureInterface => p !== undefined);
}

/**
 * The engine's evaluation of a toggle, or undefined when the engine does not compile it (the SDK
 * evaluates it, as before the engine existed): what it does not know is never guessed at.
 */
function engineOf(
  feature: FeatureInterface,
  fast: FastEvaluation,
  checks: Checks,
): ToggleEvaluation | undefined {
  try {
    return compileFeature(feature, fast, checks);
  } catch {
    return undefined;
  }
}

/** Compiles one regular toggle: its determinism, memo group, and constant outcome or engine. */
export function compileToggle(feature: FeatureInterface, parts: RevisionParts): ToggleCompiled {
  const { fast } = parts;
  const reads = [feature, ...parentsOf(feature, fast)];
  const determinism = determinismOf(reads, fast);
  const inputs = parts.memo.inputList(memoInputs(reads, fast));
  const toggle = compiledToggle({
    name: feature.name,
    impressionData: feature.impressionData === true,
    interned: parts.outcomes,
    feature,
    customCode: reads.some(
      (f) => Array.isArray(f.strategies) && f.strategies.some((s) => !fast.isBuiltInStrategy(s.name)),
    ),
    determinism,
    inputs,
    ...parts.memo.join(inputs, determinism),
  });
  if (isConstant(feature, fast))
    toggle.constant = outcomeOf(toggle, feature.enabled === true ? ENABLED_ANSWER : DISABLED_ANSWER);
  else toggle.engine = engineOf(feature, fast, parts.checks);
  return { toggle, reads };
}
