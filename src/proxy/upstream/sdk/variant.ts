import type { Context } from 'unleash-client';
import type UnleashClient from 'unleash-client/lib/client';
import type { FeatureInterface } from 'unleash-client/lib/feature';
import { defaultVariant, selectVariant } from 'unleash-client/lib/variant';
import type { SdkVariant } from '../feature-repository';

function answer(
  name: string,
  enabled: boolean,
  payload: SdkVariant['payload'],
  featureEnabled: boolean,
): SdkVariant {
  return { name, enabled, payload, feature_enabled: featureEnabled };
}

/**
 * The two answers without a variant, one object each: the toggle is disabled, or enabled with no
 * variant to choose. Most evaluations answer one of them; `engine/outcomes.ts` finds their outcome by identity.
 */
export const DISABLED_ANSWER: SdkVariant = Object.freeze(
  answer(defaultVariant.name, defaultVariant.enabled, undefined, false),
);
export const ENABLED_ANSWER: SdkVariant = Object.freeze(
  answer(defaultVariant.name, defaultVariant.enabled, undefined, true),
);

/**
 * What `UnleashClient.forceGetVariant(name, context)` answers (unleash-client 6: its
 * `resolveVariant` with the toggle check and no fallback variant), from the same pieces: the
 * client's `isFeatureEnabled` (dependencies, strategies, constraints, strategy variants) and the
 * SDK's `selectVariant` (feature variants, overrides, stickiness). The differences are of cost
 * only: no object spreads, and every answer has one shape, so reading it is monomorphic. The
 * differential test compares it with `isEnabled` + `getVariant` for random definitions.
 */
export function resolveVariant(
  client: UnleashClient,
  feature: FeatureInterface | undefined,
  context: Context,
): SdkVariant {
  if (feature === undefined) return DISABLED_ANSWER;
  const result = client.isFeatureEnabled(feature, context, () => false);
  if (!result.enabled) return DISABLED_ANSWER;
  if (result.variant)
    return answer(result.variant.name, result.variant.enabled, result.variant.payload, true);
  if (!Array.isArray(feature.variants) || feature.variants.length === 0) return ENABLED_ANSWER;
  const variant = selectVariant(feature, context);
  if (variant === null) return ENABLED_ANSWER;
  return answer(variant.name, true, variant.payload, true);
}
