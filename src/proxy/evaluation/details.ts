import type { Context } from 'unleash-client';
import type { FeatureInterface } from 'unleash-client/lib/feature';
import type { StrategyTransportInterface } from 'unleash-client/lib/strategy';
import type { EvaluatedToggle, FeatureRepository, SdkVariant } from '../upstream/feature-repository';
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

/** The parameter of each built-in percentage strategy that holds its percentage. */
const PERCENTAGE_PARAMETER: Readonly<Record<string, string>> = {
  flexibleRollout: 'rollout',
  gradualRolloutUserId: 'percentage',
  gradualRolloutSessionId: 'percentage',
  gradualRolloutRandom: 'percentage',
};

/** More than one variant to choose from: the value is a (sticky) pseudorandom pick. */
function splitsVariants(strategy: StrategyTransportInterface, feature: FeatureInterface): boolean {
  const variants = strategy.variants?.length ? strategy.variants : (feature.variants ?? []);
  return variants.filter((v) => (v.weight ?? 0) > 0).length > 1;
}

/**
 * The reason an enabled toggle gets from the strategy that enabled it: SPLIT for a percentage below
 * 100 or a pick among variants, TARGETING_MATCH when constraints, segments or a targeting strategy
 * (user ids, addresses, host names, custom code) decided, STATIC for an unconditional strategy.
 */
export function reasonOf(strategy: StrategyTransportInterface, feature: FeatureInterface): EvaluationReason {
  const parameters = (strategy.parameters ?? {}) as Record<string, unknown>;
  const percentageName = PERCENTAGE_PARAMETER[strategy.name];
  const percentage = percentageName === undefined ? 100 : Number(parameters[percentageName] ?? 100);
  if (percentage < 100 || splitsVariants(strategy, feature)) return 'SPLIT';
  if ((strategy.constraints?.length ?? 0) > 0 || (strategy.segments?.length ?? 0) > 0)
    return 'TARGETING_MATCH';
  if (strategy.name === 'default' || percentageName !== undefined) return 'STATIC';
  return 'TARGETING_MATCH';
}

/**
 * Evaluates one known toggle for a context, with its reason: the same SDK call (`resolve`), the
 * same usage count (`count`) and the same serialisation (`toEvaluatedToggle`) as the evaluator of
 * `/proxy`, plus the strategy the SDK stopped at. Undefined for a name the definitions do not have
 * (not evaluated, not counted).
 */
export function evaluateWithDetails(
  features: FeatureRepository,
  name: string,
  context: Context,
): EvaluationDetails | undefined {
  const feature = features.toggle(name);
  if (!feature) return undefined;
  const fast = features.fast?.();
  const impressionData = feature.impressionData === true;
  if (!fast) {
    const plain = features.evaluate(name, context);
    if (!plain) return { toggle: disabledToggle(name, impressionData), feature, reason: 'ERROR' };
    const toggle = toEvaluatedToggle(name, impressionData, plain);
    return { toggle, feature, reason: plainReason(feature, toggle) };
  }
  let result: SdkVariant;
  try {
    result = fast.resolve(name, fast.enhance(context));
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
