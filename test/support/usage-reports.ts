import type { TestUpstream } from './upstream';

/** One toggle's usage as the SDK reports it: yes/no counts and counts per variant. */
export interface ToggleUsage {
  yes: number;
  no: number;
  variants: Record<string, number>;
}

/** The usage counts of every report the upstream received (`/api/client/metrics`), summed per toggle. */
export function reportedUsage(upstream: TestUpstream): Record<string, ToggleUsage> {
  const counted: Record<string, ToggleUsage> = {};
  for (const post of upstream.posted('/api/client/metrics')) {
    const toggles = (post.body as { bucket: { toggles: Record<string, ToggleUsage> } }).bucket.toggles;
    for (const [name, c] of Object.entries(toggles)) {
      const sum = (counted[name] ??= { yes: 0, no: 0, variants: {} });
      sum.yes += c.yes;
      sum.no += c.no;
      for (const [v, n] of Object.entries(c.variants)) sum.variants[v] = (sum.variants[v] ?? 0) + n;
    }
  }
  return counted;
}
