import type { Context } from 'unleash-client';
import type UnleashClient from 'unleash-client/lib/client';
import type { FeatureInterface } from 'unleash-client/lib/feature';
import { defaultVariant, selectVariant } from 'unleash-client/lib/variant';
import type { SdkVariant } from './feature-repository';

function answer(
  name: string,
  enabled: boolean,
  payload: SdkVariant['payload'],
  featureEnabled: boolean,
): SdkVariant {
  return { name, enabled, payload, feature_enabled: featureEnabled };
}

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
  const fallback = defaultVariant;
  if (feature === undefined) return answer(fallback.name, fallback.enabled, undefined, false);
  const result = client.isFeatureEnabled(feature, context, () => false);
  if (!result.enabled) return answer(fallback.name, fallback.enabled, undefined, false);
  if (result.variant)
    return answer(result.variant.name, result.variant.enabled, result.variant.payload, true);
  if (!Array.isArray(feature.variants) || feature.variants.length === 0)
    return answer(fallback.name, fallback.enabled, undefined, true);
  const variant = selectVariant(feature, context);
  if (variant === null) return answer(fallback.name, fallback.enabled, undefined, true);
  return answer(variant.name, true, variant.payload, true);
}
