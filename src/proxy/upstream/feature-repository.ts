import type { ClientFeaturesResponse, Context } from 'unleash-client';
import type { FeatureInterface } from 'unleash-client/lib/feature';
import type { Segment } from 'unleash-client/lib/strategy/strategy';

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

export interface UpstreamStats {
  /** Epoch ms of the last accepted definitions set, 0 before. */
  lastUpdate: number;
  /** Epoch ms of the last completed check for updates (changed or unchanged), 0 before. */
  lastFetch: number;
  /** Number of failed or rejected fetches since start. */
  fetchErrors: number;
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
  segments(): Segment[];
  /** Client-API response of the current definitions, for server-side SDKs reading through the proxy. */
  clientFeatures(): ClientFeaturesResponse;
  /** One SDK evaluation of one toggle; counts usage exactly as the SDK does. */
  evaluate(name: string, context: Context): EvaluatedToggle;
  /** Subscribes to definition changes; returns an unsubscribe function. */
  onChange(listener: () => void): () => void;
  close(): Promise<void>;
}
