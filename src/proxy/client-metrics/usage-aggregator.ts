/** Counts of one toggle as the client API carries them. */
export interface ToggleCounts {
  yes: number;
  no: number;
  variants?: Record<string, number> | null;
}

/** One app's usage over a time window; what is received from clients and forwarded upstream. */
export interface UsageBucket {
  appName: string;
  environment?: string | null;
  /** Epoch ms. */
  start: number;
  /** Epoch ms. */
  stop: number;
  toggles: Record<string, ToggleCounts>;
  /** Forwards of these counts that failed (network error or 5xx) in a row; they are retried within a bound. */
  failures?: number;
  /** Markers of the instances of ours the counts passed through (see `usage-chain.ts`). */
  chain?: readonly string[];
}

export interface UsageBounds {
  /** Most distinct (appName, environment) pairs held at once. */
  maxApps: number;
  /** Most distinct (app, toggle) entries held at once, over all apps. */
  maxToggles: number;
  /** Most distinct (app, toggle, variant) entries held at once, over all apps. */
  maxVariants: number;
  /**
   * Most new apps one client address may open per forward interval, so that one client sending
   * made-up app names cannot take every app slot from the others.
   */
  maxAppsPerSource: number;
}

export const DEFAULT_USAGE_BOUNDS: UsageBounds = {
  maxApps: 1000,
  maxToggles: 10_000,
  maxVariants: 10_000,
  maxAppsPerSource: 100,
};

/**
 * Why client usage was dropped: a bound was reached for a new app, toggle, variant or registration,
 * or the upstream refused (4xx) a forwarded bucket or registration.
 */
export type DropReason =
  | 'app'
  | 'toggle'
  | 'variant'
  | 'registration'
  | 'metrics_refused'
  | 'registration_refused'
  | 'metrics_undeliverable'
  | 'registration_undeliverable'
  /** Usage or a registration that passed through this instance before: the upstreams form a loop. */
  | 'loop';

/** One app's pending usage as `/internal-backstage/metricsbatch` shows it. */
export interface PendingAppUsage {
  appName: string;
  environment: string | undefined;
  /** Distinct toggles counted. */
  toggles: number;
  yes: number;
  no: number;
}

export interface AggregateSize {
  apps: number;
  toggles: number;
  variants: number;
}

interface Counts {
  yes: number;
  no: number;
  variants: Map<string, number>;
}

interface AppAggregate {
  appName: string;
  environment: string | undefined;
  start: number;
  stop: number;
  toggles: Map<string, Counts>;
  failures: number;
  chain: Set<string>;
}

/** How many new entries each client address opened since the last forward. */
export class SourceQuota {
  private readonly counts = new Map<string, number>();

  /** Counts one more entry for `source`; false (and nothing counted) when it already has `max`. */
  take(source: string, max: number): boolean {
    const used = this.counts.get(source) ?? 0;
    if (used >= max) return false;
    this.counts.set(source, used + 1);
    return true;
  }
}

/** Adds without ever leaving the range where integers are exact. */
const add = (a: number, b: number) => Math.min(a + b, Number.MAX_SAFE_INTEGER);

/**
 * Sums usage buckets per (appName, environment) in memory. Memory grows with the number of distinct
 * apps, toggles and variants — never with the counts — and those are bounded: a key beyond a bound is
 * dropped (its counts are lost) and reported through `onDrop`, while known keys keep counting.
 */
export class UsageAggregator {
  private apps = new Map<string, AppAggregate>();
  /** Apps each client address opened in this interval (at most `maxApps` entries). */
  private opened = new SourceQuota();
  private toggleEntries = 0;
  private variantEntries = 0;

  constructor(
    private readonly bounds: UsageBounds = DEFAULT_USAGE_BOUNDS,
    private readonly onDrop: (reason: DropReason) => void = () => undefined,
  ) {}

  /** Merges one bucket: from a client (`source` is its address), or one that failed to be forwarded. */
  add(bucket: UsageBucket, source?: string): void {
    const environment = bucket.environment ?? undefined;
    const key = JSON.stringify([bucket.appName, environment ?? null]);
    let app = this.apps.get(key);
    if (!app) {
      if (
        this.apps.size >= this.bounds.maxApps ||
        (source !== undefined && !this.opened.take(source, this.bounds.maxAppsPerSource))
      ) {
        this.onDrop('app');
        return;
      }
      app = {
        appName: bucket.appName,
        environment,
        start: bucket.start,
        stop: bucket.stop,
        toggles: new Map(),
        failures: 0,
        chain: new Set(),
      };
      this.apps.set(key, app);
    }
    app.start = Math.min(app.start, bucket.start);
    app.stop = Math.max(app.stop, bucket.stop);
    app.failures = Math.max(app.failures, bucket.failures ?? 0);
    for (const marker of bucket.chain ?? []) app.chain.add(marker);
    for (const [name, counts] of Object.entries(bucket.toggles)) this.addToggle(app, name, counts);
  }

  private addToggle(app: AppAggregate, name: string, counts: ToggleCounts): void {
    let entry = app.toggles.get(name);
    if (!entry) {
      if (this.toggleEntries >= this.bounds.maxToggles) {
        this.onDrop('toggle');
        return;
      }
      entry = { yes: 0, no: 0, variants: new Map() };
      app.toggles.set(name, entry);
      this.toggleEntries += 1;
    }
    entry.yes = add(entry.yes, counts.yes);
    entry.no = add(entry.no, counts.no);
    for (const [variant, n] of Object.entries(counts.variants ?? {})) {
      const known = entry.variants.get(variant);
      if (known !== undefined) {
        entry.variants.set(variant, add(known, n));
      } else if (this.variantEntries >= this.bounds.maxVariants) {
        this.onDrop('variant');
      } else {
        entry.variants.set(variant, n);
        this.variantEntries += 1;
      }
    }
  }

  /** Takes every aggregate out, one bucket per app, leaving the aggregator empty. */
  drain(): UsageBucket[] {
    const buckets = [...this.apps.values()]
      .filter((app) => app.toggles.size > 0)
      .map((app) => ({
        appName: app.appName,
        ...(app.environment !== undefined ? { environment: app.environment } : {}),
        start: app.start,
        stop: app.stop,
        ...(app.failures > 0 ? { failures: app.failures } : {}),
        ...(app.chain.size > 0 ? { chain: [...app.chain].sort() } : {}),
        toggles: Object.fromEntries(
          [...app.toggles].map(([name, c]) => [
            name,
            { yes: c.yes, no: c.no, variants: Object.fromEntries(c.variants) },
          ]),
        ),
      }));
    this.apps = new Map();
    this.opened = new SourceQuota();
    this.toggleEntries = 0;
    this.variantEntries = 0;
    return buckets;
  }

  /** What is pending, per app: its name, environment, toggle count and summed counts (no toggle names). */
  pending(): PendingAppUsage[] {
    return [...this.apps.values()].map((app) => {
      let yes = 0;
      let no = 0;
      for (const counts of app.toggles.values()) {
        yes = add(yes, counts.yes);
        no = add(no, counts.no);
      }
      return { appName: app.appName, environment: app.environment, toggles: app.toggles.size, yes, no };
    });
  }

  /** Number of entries held: what the memory of the aggregate is proportional to. */
  size(): AggregateSize {
    return { apps: this.apps.size, toggles: this.toggleEntries, variants: this.variantEntries };
  }
}
