import { Gauge, type Registry } from 'prom-client';
import type { EnvironmentRegistry } from './registry';

/** The `environment` label of each environment, in order: its name, `name#2` for a second token of it, … */
export function environmentLabels(environments: EnvironmentRegistry): string[] {
  const labels: string[] = [];
  const seen = new Map<string, number>();
  for (const env of environments.environments) {
    const n = (seen.get(env.name) ?? 0) + 1;
    seen.set(env.name, n);
    labels.push(n === 1 ? env.name : `${env.name}#${n}`);
  }
  return labels;
}

/**
 * Per-environment series, labelled `environment` (a second token of the same environment is
 * labelled `name#2`, …): readiness, toggles held and the upstream's last update and fetch. The
 * unlabelled series of the spec keep describing the first upstream token.
 */
export function registerEnvironmentMetrics(registry: Registry, environments: EnvironmentRegistry): void {
  const labels = environmentLabels(environments);
  const each = (gauge: Gauge<'environment'>, value: (i: number) => number): void => {
    environments.environments.forEach((_env, i) => gauge.set({ environment: labels[i] }, value(i)));
  };
  const envs = environments.environments;
  const registers = [registry];
  new Gauge({
    name: 'flags_proxy_environment_ready',
    help: '1 while the environment is served (synchronised once, its upstream token not refused since), by environment',
    labelNames: ['environment'],
    registers,
    aggregator: 'min',
    collect() {
      each(this, (i) => (envs[i].isServing() ? 1 : 0));
    },
  });
  new Gauge({
    name: 'flags_proxy_environment_toggles',
    help: 'Number of toggles the proxy holds, by environment',
    labelNames: ['environment'],
    registers,
    aggregator: 'max',
    collect() {
      each(this, (i) => envs[i].features.toggles().length);
    },
  });
  new Gauge({
    name: 'flags_proxy_environment_last_update_epoch_timestamp_ms',
    help: 'Epoch ms of the last feature update received, by environment (0 before the first)',
    labelNames: ['environment'],
    registers,
    aggregator: 'max',
    collect() {
      each(this, (i) => envs[i].features.stats.lastUpdate);
    },
  });
  new Gauge({
    name: 'flags_proxy_environment_last_fetch_epoch_timestamp_ms',
    help: 'Epoch ms of the last check of the upstream for updates, by environment (0 before the first)',
    labelNames: ['environment'],
    registers,
    aggregator: 'max',
    collect() {
      each(this, (i) => envs[i].features.stats.lastFetch);
    },
  });
}
