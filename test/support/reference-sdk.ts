import UnleashClient from 'unleash-client/lib/client';
import type { Context } from 'unleash-client';
import type { FeatureInterface } from 'unleash-client/lib/feature';
import { defaultStrategies } from 'unleash-client/lib/strategy';
import type { Segment } from 'unleash-client/lib/strategy/strategy';
import type Repository from 'unleash-client/lib/repository';

/** What the plain SDK answers for one toggle, or 'threw' when its evaluation throws. */
export type ReferenceAnswer =
  { enabled: boolean; variant: { name: string; enabled: boolean; payload?: unknown } } | 'threw';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * `unleash-client`'s own evaluation of a raw definitions answer, as a server-side SDK holding it
 * would evaluate it (`getVariant` with the static context added): the oracle of differential tests.
 * Toggles are kept by name in a Map (last one wins, as in the SDK's map), so any name is data.
 */
export function referenceSdk(
  payload: { features: unknown[]; segments?: unknown },
  staticContext: Context,
): (name: string, context: Context) => ReferenceAnswer {
  const toggles = new Map<string, FeatureInterface>();
  for (const f of payload.features)
    if (isRecord(f) && typeof f.name === 'string') toggles.set(f.name, f as unknown as FeatureInterface);
  const segments = new Map<unknown, Segment>();
  if (Array.isArray(payload.segments))
    for (const s of payload.segments) if (isRecord(s)) segments.set(s.id, s as unknown as Segment);
  const repository = {
    getToggle: (name: string) => toggles.get(name),
    getSegment: (id: number) => segments.get(id),
  } as unknown as Repository;
  const client = new UnleashClient(repository, defaultStrategies);
  client.on('error', () => undefined);
  client.on('warn', () => undefined);
  return (name, context) => {
    try {
      const v = client.getVariant(name, { ...staticContext, ...context });
      // a payload is answered as its type and value (spec 2.4), whatever else the definition holds
      const variant = v.payload
        ? {
            name: v.name,
            enabled: v.enabled,
            payload: { type: String(v.payload.type), value: v.payload.value },
          }
        : { name: v.name, enabled: v.enabled };
      return { enabled: Boolean(v.feature_enabled), variant };
    } catch {
      return 'threw';
    }
  };
}
