import type { FeatureInterface } from '../upstream/sdk/types';
import { listOf } from '../upstream/toggle-faults';
import type { EvaluationDetails } from '../engine/details';

/** The value type of an OFREP flag, fixed by its definition. */
export type OfrepFlagType = 'boolean' | 'string' | 'number' | 'object';

export type OfrepValue = boolean | string | number | Record<string, unknown> | unknown[];

/** A successful OFREP evaluation; without `value` the caller's code default applies. */
export interface OfrepSuccess {
  key: string;
  value?: OfrepValue;
  reason: string;
  variant: string;
  metadata: { impressionData: boolean };
}

/** An OFREP evaluation failure of one flag. */
export interface OfrepFailure {
  key: string;
  errorCode: 'FLAG_NOT_FOUND' | 'PARSE_ERROR' | 'GENERAL';
  errorDetails: string;
}

export type OfrepResult = OfrepSuccess | OfrepFailure;

/** Payload types and the flag type they give (names are data: a Map, never a property lookup). */
const PAYLOAD_TYPES: ReadonlyMap<unknown, OfrepFlagType> = new Map([
  ['string', 'string'],
  ['csv', 'string'],
  ['number', 'number'],
  ['json', 'object'],
]);

/**
 * A toggle whose variants (its own and its strategies') all carry payloads of one type has that
 * type; every other toggle is boolean.
 */
export function flagTypeOf(feature: FeatureInterface): OfrepFlagType {
  const variants = [
    ...listOf(feature.variants),
    ...listOf(feature.strategies).flatMap((s) => listOf(s?.variants)),
  ];
  if (variants.length === 0) return 'boolean';
  const types = new Set(variants.map((v) => (v?.payload ? PAYLOAD_TYPES.get(v.payload.type) : undefined)));
  const [only] = types;
  return types.size === 1 && only !== undefined ? only : 'boolean';
}

/** The flag's value from a payload of its type; a string naming the problem when it does not parse. */
function payloadValue(type: OfrepFlagType, raw: string): { value: OfrepValue } | string {
  if (type === 'string') return { value: raw };
  if (type === 'number') {
    const value = raw.trim() === '' ? NaN : Number(raw);
    return Number.isFinite(value) ? { value } : `payload "${raw.slice(0, 40)}" is not a number`;
  }
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value === 'object' && value !== null) return { value: value as Record<string, unknown> };
    return 'payload is JSON but not an object or array';
  } catch {
    return 'payload is not valid JSON';
  }
}

/** The OFREP answer for one evaluated toggle (DESIGN "A home for users…", OFREP). */
export function toOfrepResult(details: EvaluationDetails): OfrepResult {
  const { toggle, feature, reason } = details;
  const key = toggle.name;
  if (reason === 'ERROR') {
    return { key, errorCode: 'GENERAL', errorDetails: `Evaluating flag "${key}" failed; it is logged` };
  }
  const result: OfrepSuccess = {
    key,
    reason,
    variant: toggle.variant.name,
    metadata: { impressionData: toggle.impressionData },
  };
  if (reason === 'DISABLED') return result;
  const type = flagTypeOf(feature);
  if (type === 'boolean') return { ...result, value: toggle.enabled };
  const payload = toggle.variant.payload;
  if (!toggle.enabled || !payload) return result;
  const parsed = payloadValue(type, payload.value);
  if (typeof parsed === 'string') {
    return { key, errorCode: 'PARSE_ERROR', errorDetails: `Flag "${key}" (${type}): ${parsed}` };
  }
  return { ...result, value: parsed.value };
}

export const flagNotFound = (key: string): OfrepFailure => ({
  key,
  errorCode: 'FLAG_NOT_FOUND',
  errorDetails: `Flag "${key}" was not found`,
});
