import type { Registry } from 'prom-client';
import { usageOfAll } from '../client-metrics/client-usage';
import { registerEngineMetrics } from '../environments/engine-metrics';
import type { Environment } from '../environments/environment';
import { environmentLabels, registerEnvironmentMetrics } from '../environments/environment-metrics';
import type { ProcessBudget } from '../environments/process-budget';
import type { EnvironmentRegistry } from '../environments/registry';
import { registerEdgeRequestSeries } from '../prometheus/edge-request-series';
import type { EdgeUpstreamSeries } from '../prometheus/edge-series';
import { environmentScrape } from '../prometheus/environment-filter';
import { registerOperatorSeries } from '../prometheus/operator-series';
import { ProxyMetrics } from '../prometheus/proxy-metrics';

export interface AppMetricsOptions {
  environments: EnvironmentRegistry;
  /** The series the environments registered while starting (backup, change streams): moved to the app's registry. */
  staging: Registry;
  edgeUpstream: EdgeUpstreamSeries;
  identity: { appName: string; instanceId: string };
  budget: ProcessBudget;
  prometheusCacheInterval: number;
}

/**
 * The app's Prometheus registry with every series of the proxy (requests, engine, environments,
 * Unleash Edge's names, the operator's series, client usage), and what a key's scrape shows: with
 * several environments, its own environment's series only.
 */
export function appMetrics(options: AppMetricsOptions): {
  metrics: ProxyMetrics;
  scrapeViews: Map<Environment, (text: string) => string>;
} {
  const { environments, staging, budget } = options;
  const first = environments.first;
  const metrics = new ProxyMetrics(first.features, options.prometheusCacheInterval);
  for (const { name } of staging.getMetricsAsArray()) {
    const metric = staging.getSingleMetric(name);
    if (metric) metrics.registry.registerMetric(metric);
  }
  registerEngineMetrics(metrics.registry, environments);
  registerEdgeRequestSeries(metrics.registry, metrics.requestSeries, options.identity);
  options.edgeUpstream.trackRegistrations(() => environments.environments.map((e) => e.features));
  const labels = environmentLabels(environments);
  registerOperatorSeries(metrics.registry, {
    environments: environments.environments.map((e, i) => ({
      label: labels[i],
      stats: () => e.features.stats,
    })),
    budgets: { answer_cache: budget.evaluation.answers.budget, memo: budget.evaluation.memo },
    streamLimit: budget.streams.limit,
  });
  // Several environments: a scrape shows the key's own environment's series only.
  const scrapeViews = new Map<Environment, (text: string) => string>();
  if (environments.environments.length > 1 || environments.named) {
    registerEnvironmentMetrics(metrics.registry, environments);
    environments.environments.forEach((env, i) =>
      scrapeViews.set(env, environmentScrape(labels[i], env === first)),
    );
  }
  metrics.trackClientUsage(usageOfAll(environments.environments.map((e) => e.clientUsage)));
  return { metrics, scrapeViews };
}
