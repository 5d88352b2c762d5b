import type { FeatureInterface, Segment } from './sdk/types';

/**
 * The segments these toggles' strategies name, for a client-API answer. Reads definitions of any
 * shape the SDK accepts: a strategy may be null, its `segments` anything.
 */
export function segmentsUsedBy(
  toggles: readonly FeatureInterface[],
  segment: (id: number) => Segment | undefined,
): Segment[] {
  const ids = new Set<number>();
  for (const feature of toggles) {
    const strategies: unknown = feature.strategies;
    if (!Array.isArray(strategies)) continue;
    for (const strategy of strategies as unknown[]) {
      const used: unknown = (strategy as { segments?: unknown } | null)?.segments;
      if (Array.isArray(used)) for (const id of used as unknown[]) if (typeof id === 'number') ids.add(id);
    }
  }
  return [...ids].map(segment).filter((s): s is Segment => s !== undefined);
}
