import type { ClientUsage } from '../client-metrics/client-usage';

/** An app with registrations waiting to be forwarded. */
export interface PendingApplication {
  appName: string;
  environment: string | null;
  /** Instances of the app whose registration waits. */
  instances: number;
}

/** An app's usage waiting to be forwarded: counts only, no toggle names. */
export interface PendingMetrics {
  appName: string;
  environment: string | null;
  toggles: number;
  yes: number;
  no: number;
}

/** `GET /internal-backstage/metricsbatch`: Edge's `{applications, metrics}`, reduced to app names and counts. */
export interface MetricsBatch {
  applications: PendingApplication[];
  metrics: PendingMetrics[];
}

/** The client usage every environment holds until its next forward (bounded by the usage bounds). */
export function metricsBatch(usages: readonly ClientUsage[]): MetricsBatch {
  const applications = new Map<string, PendingApplication>();
  const metrics: PendingMetrics[] = [];
  for (const usage of usages) {
    for (const r of usage.registrations.list()) {
      const environment = r.environment ?? null;
      const key = JSON.stringify([r.appName, environment]);
      const known = applications.get(key);
      if (known) known.instances += 1;
      else applications.set(key, { appName: r.appName, environment, instances: 1 });
    }
    for (const app of usage.aggregator.pending()) {
      metrics.push({ ...app, environment: app.environment ?? null });
    }
  }
  return { applications: [...applications.values()], metrics };
}
