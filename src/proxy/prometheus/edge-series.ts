import { Gauge, Histogram, type Registry } from 'prom-client';
import type { FeatureRepository } from '../upstream/feature-repository';

/** The instance the series describe, as Unleash Edge labels them (`app_name`, `instance_id`). */
export interface EdgeIdentity {
  appName: string;
  instanceId: string;
}

/** Edge's buckets of `client_feature_fetch`, in milliseconds. */
const FETCH_BUCKETS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000];

/** Longest upstream version kept as a label value; anything else in the header is ignored. */
const VERSION = /^[\x21-\x7e]{1,64}$/;

/**
 * Unleash Edge's series about its upstream, under Edge's names, types, labels and units, so Edge's
 * dashboards and alerts keep working: `client_feature_fetch` (histogram, milliseconds, every
 * definitions fetch the upstream answered, by `status_code`), `client_feature_fetch_failures`,
 * `client_register_failures` and `token_validation_failures` (gauges counting answers outside 2xx
 * by `status_code`, as Edge's are), and `upstream_version` (1 for the server and version the
 * upstream names in its `X-Unleash-Version` / `X-Edge-Version` header). A request that got no
 * answer at all (refused, timed out) is in none of them, as in Edge; our own series count those.
 */
export class EdgeUpstreamSeries {
  private readonly fetch: Histogram<'status_code' | 'app_name' | 'instance_id'>;
  private readonly fetchFailures: Gauge<'status_code' | 'app_name' | 'instance_id'>;
  private readonly validationFailures: Gauge<'status_code' | 'app_name' | 'instance_id'>;
  private readonly version: Gauge<'server' | 'version' | 'app_name' | 'instance_id'>;
  private versionLabels: { server: string; version: string } | undefined;
  private readonly labels: { app_name: string; instance_id: string };
  private repositories: () => readonly FeatureRepository[] = () => [];

  constructor(identity: EdgeIdentity, registry: Registry) {
    this.labels = { app_name: identity.appName, instance_id: identity.instanceId };
    const registers = [registry];
    const labelNames = ['status_code', 'app_name', 'instance_id'] as const;
    this.fetch = new Histogram({
      name: 'client_feature_fetch',
      help: 'Timings for fetching features in milliseconds',
      labelNames,
      buckets: FETCH_BUCKETS_MS,
      registers,
    });
    this.fetchFailures = new Gauge({
      name: 'client_feature_fetch_failures',
      help: 'Why we failed to fetch features',
      labelNames,
      registers,
      aggregator: 'sum',
    });
    const labels = this.labels;
    const repositories = () => this.repositories();
    new Gauge({
      name: 'client_register_failures',
      help: 'Why we failed to register upstream',
      labelNames,
      registers,
      aggregator: 'sum',
      collect() {
        this.reset();
        const byStatus = new Map<number, number>();
        for (const repository of repositories()) {
          for (const [status, count] of repository.stats.registerFailures)
            byStatus.set(status, (byStatus.get(status) ?? 0) + count);
        }
        for (const [status, count] of byStatus) this.set({ status_code: String(status), ...labels }, count);
      },
    });
    this.validationFailures = new Gauge({
      name: 'token_validation_failures',
      help: 'Why we failed to validate tokens',
      labelNames,
      registers,
      aggregator: 'sum',
    });
    this.version = new Gauge({
      name: 'upstream_version',
      help: "The server type (Unleash or Edge) and version of the upstream we're connected to",
      labelNames: ['server', 'version', 'app_name', 'instance_id'],
      registers,
      aggregator: 'max',
    });
  }

  /** The repositories whose own registrations `client_register_failures` counts (each environment's). */
  trackRegistrations(repositories: () => readonly FeatureRepository[]): void {
    this.repositories = repositories;
  }

  /** One definitions fetch the upstream answered with `status` after `ms` milliseconds. */
  fetchAnswered(status: number, ms: number): void {
    const labels = { status_code: String(status), ...this.labels };
    this.fetch.observe(labels, ms);
    if (status !== 304 && (status < 200 || status > 299)) this.fetchFailures.inc(labels);
  }

  /** One validation call the upstream answered with `status` (only 200 is a validation). */
  validationAnswered(status: number): void {
    if (status !== 200) this.validationFailures.inc({ status_code: String(status), ...this.labels });
  }

  /** The upstream named itself (`edge` or `unleash`) and its version in an answer. */
  upstreamVersion(server: 'edge' | 'unleash', version: string): void {
    if (!VERSION.test(version)) return;
    const current = this.versionLabels;
    if (current?.server === server && current.version === version) return;
    if (current) this.version.remove({ ...current, ...this.labels });
    this.versionLabels = { server, version };
    this.version.set({ server, version, ...this.labels }, 1);
  }
}
