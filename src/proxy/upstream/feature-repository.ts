import type { ClientFeaturesResponse, Context } from 'unleash-client';
import type { FeatureInterface, StrategyTransportInterface, Segment } from './sdk/types';
import type { ToggleFault } from './toggle-faults';

export interface EvaluatedVariant {
  name: string;
  enabled: boolean;
  payload?: { type: string; value: string };
}

export interface EvaluatedToggle {
  name: string;
  enabled: boolean;
  impressionData: boolean;
  variant: EvaluatedVariant;
}

/** What the SDK answers for one toggle: its variant and whether the toggle is enabled. */
export interface SdkVariant {
  name: string;
  enabled: boolean;
  payload?: { type: string; value: string };
  feature_enabled?: boolean;
}

/**
 * The SDK's evaluation in pieces, for the evaluation hot path. `resolve` and then
 * `FeatureRepository.addUsage` of the outcome do exactly what `evaluate()` does.
 */
export interface FastEvaluation {
  /** The context the SDK evaluates with: `{...staticContext, ...context}`, as `Unleash.getVariant` builds it. */
  enhance(context: Context): Context;
  /** The SDK's evaluation of one toggle for an enhanced context, not counted; throws what a strategy throws. */
  resolve(name: string, enhanced: Context): SdkVariant;
  /**
   * The same for a toggle definition of the current revision (`FeatureRepository.toggles()`), without
   * finding it by name again; `decidingStrategy` is not kept up to date by it.
   */
  resolveFeature(feature: FeatureInterface, enhanced: Context): SdkVariant;
  /** Logs (rate-limited) a toggle whose evaluation threw; it is answered disabled and not counted. */
  failed(name: string, err: unknown): void;
  /**
   * True when toggles using this strategy name are evaluated by the SDK's own code: a built-in
   * strategy, or a name no strategy has (the SDK skips it). False for custom strategies.
   */
  isBuiltInStrategy(name: string): boolean;
  segment(id: number): Segment | undefined;
  /**
   * A toggle as the SDK finds a dependency's parent: by name among all of the environment's
   * definitions, whatever project view the evaluation serves (a parent may be in another project).
   */
  feature(name: string): FeatureInterface | undefined;
  /**
   * The strategy of the toggle's definition that enabled it in the last `resolve` of that toggle;
   * undefined when no strategy did (disabled, nothing matched, or a toggle without strategies).
   */
  decidingStrategy(name: string): StrategyTransportInterface | undefined;
}

export interface UpstreamStats {
  /** Epoch ms of the last accepted definitions set, 0 before. */
  lastUpdate: number;
  /** Epoch ms of the last completed check for updates (changed or unchanged), 0 before. */
  lastFetch: number;
  /** Number of failed or rejected fetches since start. */
  fetchErrors: number;
  /** Number of answers refused as a whole since start: not a definitions document (the last good ones stayed in use). */
  definitionsRefused: number;
  /** Toggles of the current revision that are quarantined (answered disabled without evaluating). */
  togglesQuarantined: number;
  /** Usage reports of the proxy's own that the upstream refused (their counts were dropped). */
  usageReportsRefused: number;
  /** The proxy's own registrations (`POST client/register`) the upstream answered outside 2xx, by status. */
  registerFailures: Map<number, number>;
}

/**
 * The seam between HTTP and the SDK: readiness, a revision that changes with every accepted
 * definitions set, the definitions, and evaluation of one toggle for one context.
 */
export interface FeatureRepository {
  readonly revision: number;
  readonly stats: UpstreamStats;
  isReady(): boolean;
  whenReady(): Promise<void>;
  /** Every known toggle, sorted by name; the same array until the revision changes. */
  toggles(): readonly FeatureInterface[];
  toggle(name: string): FeatureInterface | undefined;
  /**
   * Why a toggle of the current revision is quarantined: its shape would make the SDK throw, so it
   * is answered disabled without evaluating (see `toggle-faults.ts`); undefined for every other name.
   */
  fault(name: string): ToggleFault | undefined;
  /** True for a toggle the SDK evaluates but whose types the proxy's own analysis does not rely on. */
  isIrregular(name: string): boolean;
  segments(): Segment[];
  /** Client-API response of the current definitions, for server-side SDKs reading through the proxy. */
  clientFeatures(): ClientFeaturesResponse;
  /**
   * Everything its answers depend on, as derived ETags and change streams digest it: its toggles,
   * the segments they use and, for a project view, the parents its toggles depend on in other
   * projects (with their segments). `clientFeatures()` when it holds every toggle it depends on.
   */
  answerDefinitions(): unknown;
  /**
   * One SDK evaluation of one toggle (`getVariant`), counted exactly as the SDK counts; undefined
   * when a strategy threw (logged, rate-limited, and not counted, as in the SDK).
   */
  evaluate(name: string, context: Context): SdkVariant | undefined;
  /**
   * The hot-path pieces of `evaluate`, or undefined while they cannot be used (not ready, or someone
   * listens to the SDK's impression events, which only full evaluation emits).
   */
  fast?(): FastEvaluation | undefined;
  /**
   * Adds `times` evaluations of toggle `name` to `enabled` with `variant` to the usage the SDK
   * reports upstream, as that many `getVariant` calls would have counted.
   */
  addUsage(name: string, enabled: boolean, variant: string, times: number): void;
  /**
   * Runs `listener` just before the SDK sends its usage (on its timer, on flush and on close), so
   * batched counts reach the report they belong to. Returns an unsubscribe function.
   */
  beforeUsageSent(listener: () => void): () => void;
  /** Subscribes to definition changes; returns an unsubscribe function. */
  onChange(listener: () => void): () => void;
  close(): Promise<void>;
}
