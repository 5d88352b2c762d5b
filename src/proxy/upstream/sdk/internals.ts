import { Unleash, type Strategy } from 'unleash-client';
import { nameMap } from '../../../common/http/data-record';
import type { FeatureInterface } from 'unleash-client/lib/feature';
import type Repository from 'unleash-client/lib/repository';
import type { StrategyTransportInterface } from 'unleash-client/lib/strategy';

/**
 * Everything that reaches past `unleash-client`'s public API, in one place (unleash-client 6): its
 * evaluation client, its usage-metrics bucket, its strategy list and its toggle map. Each piece
 * checks the shape it relies on, and the adapter falls back to the public API when a check fails
 * (or, where names would otherwise reach a prototype, refuses to start).
 */

/**
 * The SDK keeps toggles in a plain object keyed by name (`data[name]`): a toggle named
 * `__proto__` would replace its prototype, and `constructor` or `toString` would be found without
 * being defined. Its maps get no prototype instead, for every source (full answers, deltas, backups
 * and bootstraps all go through `convertToMap` or write into `data`).
 */
export function keepNamesAsData(repository: Repository): void {
  const convertToMap: unknown = Reflect.get(repository, 'convertToMap');
  const validateFeature: unknown = Reflect.get(repository, 'validateFeature');
  if (
    typeof convertToMap !== 'function' ||
    typeof validateFeature !== 'function' ||
    !Reflect.has(repository, 'data')
  ) {
    throw new Error('unleash-client changed: cannot keep flag names from reaching a prototype');
  }
  Reflect.set(repository, 'data', nameMap<FeatureInterface>());
  Reflect.set(repository, 'convertToMap', (features: FeatureInterface[] | undefined) => {
    const result = nameMap<FeatureInterface>();
    for (const feature of features ?? []) {
      Reflect.apply(validateFeature, repository, [feature]);
      result[feature.name] = feature;
    }
    return result;
  });
}

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

/** What the adapter learns from the usage bucket's sends. */
export interface UsageReportHooks {
  /** Runs just before every send (its timer, a flush, close), so batched counts reach that report. */
  beforeSend(): void;
  /** True once the proxy is closing: the SDK stopping its reports is then expected. */
  isClosing(): boolean;
  /**
   * The upstream refused a report (`status` when the SDK names it: 401/403; undefined for another
   * 4xx): its counts were dropped and the next interval reports again.
   */
  onRefused(status: number | undefined): void;
  /** Every report as it starts: a graceful close waits for the ones still on their way. */
  sending(report: Promise<void>): void;
}

/**
 * The SDK's usage bucket, with its sends hooked (see `UsageReportHooks`); undefined when the SDK's
 * shape is not the one this relies on. `unleash-client` 6 stops reporting for good after a 401 or
 * 403, and after any other 4xx it keeps the refused counts but never starts its timer again: here
 * a refused report's counts are dropped (they would be refused again) and the timer always goes on.
 */
export function usageBucket(unleash: Unleash, hooks: UsageReportHooks): SdkMetrics | undefined {
  const metrics: unknown = (unleash as unknown as { metrics: unknown }).metrics;
  if (!isSdkMetrics(metrics)) return undefined;
  countNamesAsData(metrics);
  const target = metrics as unknown as Record<string, unknown>;
  const startTimer = target.startTimer;
  const configurationError = target.configurationError;
  const interval = target.metricsInterval;
  if (
    typeof startTimer !== 'function' ||
    typeof configurationError !== 'function' ||
    typeof interval !== 'number'
  ) {
    return undefined;
  }
  let timerStarted = false;
  let rejectedStatus: number | undefined;
  const watchedStartTimer = () => {
    timerStarted = true;
    Reflect.apply(startTimer, metrics, []);
  };
  target.startTimer = watchedStartTimer;
  target.configurationError = (url: unknown, status: unknown) => {
    rejectedStatus = typeof status === 'number' ? status : undefined;
    Reflect.apply(configurationError, metrics, [url, status]);
  };
  const send = metrics.sendMetrics.bind(metrics);
  const report = async () => {
    hooks.beforeSend();
    timerStarted = false;
    rejectedStatus = undefined;
    const wasDisabled = metrics.disabled;
    await send();
    if (wasDisabled || hooks.isClosing() || timerStarted) return;
    // Refused: the SDK put the counts back and stopped (401/403) or forgot its timer (other 4xx).
    const status = rejectedStatus;
    metrics.disabled = false;
    target.metricsInterval = interval;
    target.bucket = (target.createBucket as () => unknown)();
    hooks.onRefused(status);
    watchedStartTimer();
  };
  metrics.sendMetrics = () => {
    const sent = report();
    hooks.sending(sent);
    return sent;
  };
  return metrics;
}

interface BucketToggle {
  yes: number;
  no: number;
  variants: Record<string, number>;
}

/**
 * The bucket keeps counts in plain objects keyed by toggle and variant name: a toggle named
 * `constructor` would be counted on `Object`, one named `__proto__` on `Object.prototype`. Its
 * bucket and every toggle's variant counts get no prototype instead.
 */
function countNamesAsData(metrics: SdkMetrics): void {
  const target = metrics as unknown as Record<string, unknown>;
  if (typeof target.createBucket !== 'function' || typeof target.resetBucket !== 'function') {
    throw new Error('unleash-client changed: cannot keep flag names from reaching a prototype');
  }
  const bucket = () => ({ start: new Date(), stop: undefined, toggles: nameMap<BucketToggle>() });
  target.createBucket = bucket;
  target.assertBucket = (name: string) => {
    if (metrics.disabled) return;
    const toggles = (target.bucket as { toggles: Record<string, BucketToggle> }).toggles;
    if (!Object.prototype.hasOwnProperty.call(toggles, name)) {
      toggles[name] = { yes: 0, no: 0, variants: nameMap<number>() };
    }
  };
  target.bucket = bucket();
}

/** The client remembers which warnings it gave in plain objects keyed by names: no prototype either. */
export function warnNamesAsData(unleash: ProxyUnleash): void {
  const client = unleash.sdkClient as unknown as Record<string, unknown>;
  if (typeof client.warnedStrategies === 'object') client.warnedStrategies = nameMap<boolean>();
  if (typeof client.warnedDependencies === 'object') client.warnedDependencies = nameMap<boolean>();
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
