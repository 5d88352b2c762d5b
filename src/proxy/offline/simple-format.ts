import type { ClientFeaturesResponse } from '../upstream/sdk/types';

type SimpleFeature = { enabled: boolean; variant?: string | null };

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function isSimpleFeature(value: unknown): value is SimpleFeature {
  if (!isRecord(value) || typeof value.enabled !== 'boolean') return false;
  const variant = value.variant;
  return variant === undefined || variant === null || typeof variant === 'string';
}

/**
 * True for Unleash Edge's simple offline format, `{"<name>": {"enabled": bool, "variant"?: string}}`:
 * an object every value of which is such an entry (`{}` included), as Edge tries it before the
 * client API's format. Any other JSON is read as the client API's format.
 */
export function isSimpleFormat(value: unknown): value is Record<string, SimpleFeature> {
  return isRecord(value) && Object.values(value).every(isSimpleFeature);
}

/**
 * The client API's definitions of a simple file, as Unleash Edge builds them: each entry one toggle
 * of project `default` with one `default` strategy, enabled as given, and the variant named (if
 * any) as its only variant (weight 1000, fixed, `default` stickiness). Names are data: every own
 * key is a toggle, `__proto__` and `constructor` included.
 */
export function simpleToClientFeatures(simple: Record<string, SimpleFeature>): ClientFeaturesResponse {
  const features = Object.entries(simple).map(([name, entry]) => ({
    name,
    enabled: entry.enabled,
    project: 'default',
    impressionData: false,
    strategies: [{ name: 'default', parameters: {}, constraints: [], variants: [] }],
    variants:
      typeof entry.variant === 'string'
        ? [{ name: entry.variant, weight: 1000, weightType: 'fix', stickiness: 'default' }]
        : [],
  }));
  return { version: 2, features } as unknown as ClientFeaturesResponse;
}
