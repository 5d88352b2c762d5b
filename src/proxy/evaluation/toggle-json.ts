import type { EvaluatedToggle, SdkVariant } from '../upstream/feature-repository';

export const FALLBACK_VARIANT = Object.freeze({ name: 'disabled', enabled: false });

/** The toggle of a response for one SDK answer: the one mapping every evaluation path uses. */
export function toEvaluatedToggle(
  name: string,
  impressionData: boolean,
  result: SdkVariant,
): EvaluatedToggle {
  const variant = result.payload
    ? {
        name: result.name,
        enabled: result.enabled,
        payload: { type: String(result.payload.type), value: result.payload.value },
      }
    : result.name === FALLBACK_VARIANT.name && !result.enabled
      ? FALLBACK_VARIANT
      : { name: result.name, enabled: result.enabled };
  return { name, enabled: Boolean(result.feature_enabled), impressionData, variant };
}

/** A toggle list as the response body: `{"toggles":[...]}` from pre-serialised entries. */
export function toggleListBody(fragments: readonly string[]): string {
  return `{"toggles":[${fragments.join(',')}]}`;
}
