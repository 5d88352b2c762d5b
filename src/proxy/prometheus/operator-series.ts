import { Counter, Gauge, type Registry } from 'prom-client';
import type { UpstreamStats } from '../upstream/feature-repository';

/** One environment, as the operator series read it. */
export interface OperatedEnvironment {
  /** Its `environment` label (`environmentLabels`). */
  label: string;
  stats: () => UpstreamStats;
}

/** A memory budget: its limit and what is held against it, in bytes. */
export interface OperatedBudget {
  readonly maxBytes: number;
  readonly bytes: number;
}

export interface OperatorSources {
  environments: readonly OperatedEnvironment[];
  /** The evaluation memory budgets by name (`answer_cache`, `memo`). */
  budgets: Readonly<Record<string, OperatedBudget>>;
  /** How many change streams may be open at once. */
  streamLimit: number;
}

/**
 * The series a dashboard needs beside the others, labelled the same with one environment as with
 * several: each environment's fetch failures and how long ago the upstream last confirmed its
 * definitions, the evaluation memory against its budgets, and the change-stream limit. All read at
 * scrape time from what the proxy already keeps.
 */
export function registerOperatorSeries(registry: Registry, sources: OperatorSources): void {
  const registers = [registry];
  const { environments, budgets } = sources;
  new Counter({
    name: 'flags_proxy_environment_fetch_errors_total',
    help: 'Failed or rejected fetches of flag definitions from the upstream since start, by environment',
    labelNames: ['environment'],
    registers,
    aggregator: 'sum',
    collect() {
      this.reset();
      for (const env of environments) this.inc({ environment: env.label }, env.stats().fetchErrors);
    },
  });
  new Gauge({
    name: 'flags_proxy_environment_definitions_age_seconds',
    help: 'Seconds since the upstream last confirmed the definitions (a fetch answered, changed or not), by environment; no sample before the first',
    labelNames: ['environment'],
    registers,
    aggregator: 'max',
    collect() {
      this.reset();
      const now = Date.now();
      for (const env of environments) {
        const lastFetch = env.stats().lastFetch;
        if (lastFetch > 0) this.set({ environment: env.label }, Math.max(0, now - lastFetch) / 1000);
      }
    },
  });
  new Gauge({
    name: 'flags_proxy_memory_budget_bytes',
    help: 'Bytes the evaluation memory may hold, by budget (answer_cache: whole answers; memo: remembered per-toggle results)',
    labelNames: ['budget'],
    registers,
    aggregator: 'sum',
    collect() {
      for (const [budget, held] of Object.entries(budgets)) this.set({ budget }, held.maxBytes);
    },
  });
  new Gauge({
    name: 'flags_proxy_memory_used_bytes',
    help: 'Bytes the evaluation memory holds now, by budget (answer_cache, memo)',
    labelNames: ['budget'],
    registers,
    aggregator: 'sum',
    collect() {
      for (const [budget, held] of Object.entries(budgets)) this.set({ budget }, held.bytes);
    },
  });
  new Gauge({
    name: 'flags_proxy_event_streams_limit',
    help: 'OFREP change-notification streams that may be open at once (maxStreams, at most half the descriptors)',
    registers,
    aggregator: 'sum',
    collect() {
      this.set(sources.streamLimit);
    },
  });
}
