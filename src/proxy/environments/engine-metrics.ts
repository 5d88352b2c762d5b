import { Gauge, type Registry } from 'prom-client';
import { environmentLabels } from './environment-metrics';
import type { EnvironmentRegistry } from './registry';

/**
 * `flags_proxy_toggles_sdk_evaluated{environment}`: toggles of each environment's current
 * definitions that the engine does not compile (custom strategies, definitions it does not know),
 * so the SDK evaluates them on every request. Labelled with one environment as with several.
 */
export function registerEngineMetrics(registry: Registry, environments: EnvironmentRegistry): void {
  const labels = environmentLabels(environments);
  const envs = environments.environments;
  new Gauge({
    name: 'flags_proxy_toggles_sdk_evaluated',
    help: "Toggles the SDK evaluates on every request because the proxy's engine does not compile them (custom strategies, definitions it does not know), by environment",
    labelNames: ['environment'],
    registers: [registry],
    aggregator: 'max',
    collect() {
      envs.forEach((env, i) => this.set({ environment: labels[i] }, env.all.evaluator.sdkEvaluated()));
    },
  });
}
