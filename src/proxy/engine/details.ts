import type { Context } from 'unleash-client';
import type { FeatureInterface, StrategyTransportInterface } from '../upstream/sdk/types';
import { listOf } from '../upstream/toggle-faults';
import { ownCopy } from '../context/build-context';
import type {
  EvaluatedToggle,
  FastEvaluation,
  FeatureRepository,
  SdkVariant,
} from '../upstream/feature-repository';
import { parentsOf } from './compile-toggle';
import { disabledToggle, toEvaluatedToggle } from './toggle-json';

/**
 * Why a toggle evaluated as it did, in OpenFeature's words. `ERROR`: a strategy threw (the toggle
 * is answered disabled, as everywhere); `UNKNOWN`: the SDK's pieces were not usable for this call.
 */
export type EvaluationReason =
  'DISABLED' | 'DEFAULT' | 'STATIC' | 'TARGETING_MATCH' | 'SPLIT' | 'ERROR' | 'UNKNOWN';

/** One toggle's evaluation, exactly as `/proxy` serialises it, with its reason and definition. */
export interface EvaluationDetails {
  readonly toggle: EvaluatedToggle;
  readonly reason: EvaluationReason;
  readonly feature: FeatureInterface;
}

/** The parameter of each built-in percentage strategy that holds its percentage (names are data: a Map). */
const PERCENTAGE_PARAMETER: ReadonlyMap<unknown, string> = new Map([
  ['flexibleRollout', 'rollout'],
  ['gradualRolloutUserId', 'percentage'],
  ['gradualRolloutSessionId', 'percentage'],
  ['gradualRolloutRandom', 'percentage'],
]);

/** More than one variant to choose from: the value is a (sticky) pseudorandom pick. */
function splitsVariants(strategy: StrategyTransportInterface, feature: FeatureInterface): boolean {
  const own = listOf(strategy.variants);
  const variants = own.length > 0 ? own : listOf(feature.variants);
  return variants.filter((v) => Number(v?.weight ?? 0) > 0).length > 1;
}

/**
 * The reason an enabled toggle gets from the strategy that enabled it: SPLIT for a percentage below
 * 100 or a pick among variants, TARGETING_MATCH when constraints, segments or a targeting strategy
 * (user ids, addresses, host names, custom code) decided, STATIC for an unconditional strategy.
 */
export function reasonOf(strategy: StrategyTransportInterface, feature: FeatureInterface): EvaluationReason {
  const parameters = (strategy.parameters ?? {}) as Record<string, unknown>;
  const percentageName = PERCENTAGE_PARAMETER.get(strategy.name);
  const percentage =
    percentageName === undefined || !Object.prototype.hasOwnProperty.call(parameters, percentageName)
      ? 100
      : Number(parameters[percentageName] ?? 100);
  if (percentage < 100 || splitsVariants(strategy, feature)) return 'SPLIT';
  if (listOf(strategy.constraints).length > 0 || listOf(strategy.segments).length > 0)
    return 'TARGETING_MATCH';
  if (strategy.name === 'default' || percentageName !== undefined) return 'STATIC';
  return 'TARGETING_MATCH';
}

/** True when code we do not know runs for the toggle: a custom strategy of its own or of a parent. */
function runsCustomCode(feature: FeatureInterface, fast: FastEvaluation): boolean {
  // parents as the SDK finds them: in the whole environment, whatever the key's projects
  return [feature, ...parentsOf(feature, fast)].some(
    (f) => Array.isArray(f?.strategies) && f.strategies.some((s) => !fast.isBuiltInStrategy(s.name)),
  );
}

/**
 * Evaluates known toggles for one context, with their reasons: the same SDK call (`resolve`), the
 * same usage count and the same serialisation (`toEvaluatedToggle`) as the evaluator of `/proxy`,
 * plus the strategy the SDK stopped at. The context is enhanced once for all of them; a toggle
 * running custom code gets its own copy. The function answers undefined for a name the definitions
 * do not have (not evaluated, not counted).
 */
export function detailsFor(
  features: FeatureRepository,
  context: Context,
): (name: string) => EvaluationDetails | undefined {
  const fast = features.fast?.();
  const enhanced = fast?.enhance(context);
  return (name) => {
    const feature = features.toggle(name);
    if (!feature) return undefined;
    // quarantined: never handed to the SDK, answered disabled with OFREP's ERROR
    if (features.fault(name))
      return { toggle: disabledToggle(name, feature.impressionData === true), feature, reason: 'ERROR' };
    if (!fast || !enhanced) return plainDetails(features, feature, name, context);
    return fastDetails(features, fast, feature, name, enhanced);
  };
}

/** One toggle's details (see `detailsFor`). */
export function evaluateWithDetails(
  features: FeatureRepository,
  name: string,
  context: Context,
): EvaluationDetails | undefined {
  return detailsFor(features, context)(name);
}

function plainDetails(
  features: FeatureRepository,
  feature: FeatureInterface,
  name: string,
  context: Context,
): EvaluationDetails {
  const impressionData = feature.impressionData === true;
  const plain = features.evaluate(name, ownCopy(context));
  if (!plain) return { toggle: disabledToggle(name, impressionData), feature, reason: 'ERROR' };
  const toggle = toEvaluatedToggle(name, impressionData, plain);
  return { toggle, feature, reason: plainReason(feature, toggle) };
}

function fastDetails(
  features: FeatureRepository,
  fast: FastEvaluation,
  feature: FeatureInterface,
  name: string,
  enhanced: Context,
): EvaluationDetails {
  const impressionData = feature.impressionData === true;
  let result: SdkVariant;
  try {
    result = fast.resolve(name, runsCustomCode(feature, fast) ? ownCopy(enhanced) : enhanced);
  } catch (err) {
    fast.failed(name, err);
    return { toggle: disabledToggle(name, impressionData), feature, reason: 'ERROR' };
  }
  const decided = result.feature_enabled ? fast.decidingStrategy(name) : undefined;
  const toggle = toEvaluatedToggle(name, impressionData, result);
  features.addUsage(name, toggle.enabled, result.name, 1);
  if (!feature.enabled) return { toggle, feature, reason: 'DISABLED' };
  if (!toggle.enabled) return { toggle, feature, reason: 'DEFAULT' };
  if (!feature.strategies?.length) return { toggle, feature, reason: 'STATIC' };
  return { toggle, feature, reason: decided ? reasonOf(decided, feature) : 'UNKNOWN' };
}

function plainReason(feature: FeatureInterface, toggle: EvaluatedToggle): EvaluationReason {
  if (!feature.enabled) return 'DISABLED';
  return toggle.enabled ? 'UNKNOWN' : 'DEFAULT';
}
