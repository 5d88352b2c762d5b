import { Unleash, type Strategy } from 'unleash-client';
import type { StrategyTransportInterface } from 'unleash-client/lib/strategy';

/**
 * Everything that reaches past `unleash-client`'s public API, in one place (unleash-client 6): its
 * evaluation client, its usage-metrics bucket and its strategy list. Each piece checks the shape
 * it relies on, and the adapter falls back to the public API when a check fails.
 */

/** `Unleash` with its evaluation client reachable, for evaluating without a context spread per toggle. */
export class ProxyUnleash extends Unleash {
  get sdkClient() {
    return this.client;
  }
}

/** The SDK's usage-metrics collector, as far as batched counting needs it (a private field of `Unleash`). */
export interface SdkMetrics {
  disabled: boolean;
  increaseCounter(name: string, enabled: boolean, inc: number): void;
  increaseVariantCounter(name: string, variant: string, inc: number): void;
  sendMetrics(): Promise<void>;
}

function isSdkMetrics(value: unknown): value is SdkMetrics {
  const m = value as Partial<SdkMetrics> | undefined;
  return (
    typeof m?.disabled === 'boolean' &&
    typeof m.increaseCounter === 'function' &&
    typeof m.increaseVariantCounter === 'function' &&
    typeof m.sendMetrics === 'function'
  );
}

/**
 * The SDK's usage bucket, with `beforeSend` run just before every send (its timer, a flush, close),
 * so batched counts reach the report they belong to; undefined when the SDK's shape is not the one
 * this relies on.
 */
export function usageBucket(unleash: Unleash, beforeSend: () => void): SdkMetrics | undefined {
  const metrics: unknown = (unleash as unknown as { metrics: unknown }).metrics;
  if (!isSdkMetrics(metrics)) return undefined;
  const send = metrics.sendMetrics.bind(metrics);
  metrics.sendMetrics = () => {
    beforeSend();
    return send();
  };
  return metrics;
}

/**
 * Which strategy definition enabled a toggle (OFREP reasons). Puts a wrapper in front of each of
 * the client's strategies (the SDK's shared built-in instances stay untouched) that notes the last
 * strategy call returning enabled. The SDK stops at the first strategy that enables a toggle, after
 * evaluating its parents, so after a `reset` and an evaluation that came back enabled, `find` names
 * the deciding strategy of that toggle.
 */
export class DecidingStrategy {
  private name: string | undefined;
  private parameters: unknown;
  private variants: unknown;

  constructor(unleash: ProxyUnleash) {
    const client = unleash.sdkClient as unknown as { strategies?: unknown };
    if (!Array.isArray(client.strategies)) return;
    client.strategies = (client.strategies as Strategy[]).map((strategy) => {
      const watched = Object.create(strategy) as Strategy;
      watched.getResult = (parameters, context, constraints, variants) => {
        const result = strategy.getResult(parameters, context, constraints, variants);
        if (result.enabled) {
          this.name = strategy.name;
          this.parameters = parameters;
          this.variants = variants;
        }
        return result;
      };
      return watched;
    });
  }

  /** Forgets the last note: call before each evaluation. */
  reset(): void {
    this.name = undefined;
  }

  /** The definition among `strategies` whose call was noted last; the SDK passes its own objects. */
  find(
    strategies: readonly StrategyTransportInterface[] | undefined,
  ): StrategyTransportInterface | undefined {
    if (this.name === undefined) return undefined;
    return strategies?.find(
      (s) => s.name === this.name && s.parameters === this.parameters && s.variants === this.variants,
    );
  }
}
