import { RateLimitedLog } from '../../common/logging/rate-limited-log';
import type { HttpOptions } from '../upstream/sdk/types';
import type { ProxyConfig } from '../config/types';
import { MetricsForwarder, type ForwardResult } from './forwarder';
import { DEFAULT_MAX_REGISTRATIONS, PendingRegistrations } from './pending-registrations';
import type { ClientMetricsPayload, ClientRegistrationPayload } from './schemas';
import { sdkTransport, type UpstreamPath, type UpstreamPost } from './upstream-transport';
import { newChainMarker } from './usage-chain';
import { DEFAULT_USAGE_BOUNDS, UsageAggregator, type DropReason, type UsageBounds } from './usage-aggregator';

/** The instance id Unleash records for a registration that names none. */
const DEFAULT_INSTANCE_ID = 'default';

export interface ClientUsageOptions {
  config: Pick<
    ProxyConfig,
    'flagsUrl' | 'flagsApiToken' | 'flagsInstanceId' | 'metricsInterval' | 'metricsJitter' | 'logger'
  > &
    Partial<Pick<ProxyConfig, 'customClientHeaders' | 'upstreamRequestTimeout'>>;
  httpOptions: HttpOptions;
  bounds?: UsageBounds;
  maxRegistrations?: number;
  onDrop?: (reason: DropReason) => void;
  onForward?: (path: UpstreamPath, result: ForwardResult) => void;
  /** Replaces the SDK transport; only for tests of the forwarding logic itself. */
  send?: UpstreamPost;
}

/**
 * Usage metrics and registrations of client SDKs: received through the proxy, held in bounded
 * memory and forwarded upstream at `metricsInterval`. With `metricsInterval: 0` usage reporting is
 * off, as in the SDK: payloads are still validated and answered 202, then discarded.
 */
export class ClientUsage {
  readonly aggregator: UsageAggregator;
  readonly registrations: PendingRegistrations;
  readonly forwarder: MetricsForwarder;
  readonly enabled: boolean;
  /** This instance's marker in the chain of what it forwards (see `usage-chain.ts`). */
  readonly marker = newChainMarker();
  private readonly onDrop: ((reason: DropReason) => void) | undefined;
  private readonly loopLog: RateLimitedLog;

  constructor(opts: ClientUsageOptions) {
    const { config } = opts;
    this.onDrop = opts.onDrop;
    this.loopLog = new RateLimitedLog(config.logger, 60_000);
    this.enabled = config.metricsInterval > 0;
    this.aggregator = new UsageAggregator(opts.bounds ?? DEFAULT_USAGE_BOUNDS, opts.onDrop);
    this.registrations = new PendingRegistrations(
      opts.maxRegistrations ?? DEFAULT_MAX_REGISTRATIONS,
      opts.onDrop,
    );
    this.forwarder = new MetricsForwarder({
      aggregator: this.aggregator,
      registrations: this.registrations,
      send:
        opts.send ??
        sdkTransport({
          flagsUrl: config.flagsUrl,
          flagsApiToken: config.flagsApiToken,
          instanceId: config.flagsInstanceId,
          metricsInterval: config.metricsInterval,
          httpOptions: opts.httpOptions,
          customHeaders: config.customClientHeaders,
          timeoutMs: config.upstreamRequestTimeout,
        }),
      instanceId: config.flagsInstanceId,
      marker: this.marker,
      intervalMs: config.metricsInterval,
      jitterMs: config.metricsJitter,
      logger: config.logger,
      onForward: opts.onForward,
      onDrop: opts.onDrop,
    });
    this.forwarder.start();
  }

  /**
   * Whether a payload's chain shows it passed through this instance before (or is longer than any
   * chain of instances): then it is dropped, counted (`loop`) and logged at most once a minute.
   */
  private cameBack(chain: readonly string[] | 'too long'): boolean {
    if (chain !== 'too long' && !chain.includes(this.marker)) return false;
    this.onDrop?.('loop');
    this.loopLog.warn(
      'client usage forwarded by this instance came back through a downstream instance: the upstreams form a loop (an instance whose upstream URL leads back here); that usage is dropped',
      'loop',
    );
    return true;
  }

  /**
   * `source`: the client's address; it bounds how many app slots one client can take per interval.
   * `chain`: the markers of the instances of ours it passed through (none from an SDK).
   */
  recordMetrics(m: ClientMetricsPayload, source?: string, chain: readonly string[] | 'too long' = []): void {
    if (!this.enabled || !m.bucket || this.cameBack(chain)) return;
    this.aggregator.add(
      {
        appName: m.appName,
        environment: m.environment ?? undefined,
        start: m.bucket.start,
        stop: m.bucket.stop,
        toggles: m.bucket.toggles,
        ...(chain !== 'too long' && chain.length > 0 ? { chain } : {}),
      },
      source,
    );
  }

  recordRegistration(
    r: ClientRegistrationPayload,
    source?: string,
    chain: readonly string[] | 'too long' = [],
  ): void {
    if (!this.enabled || this.cameBack(chain)) return;
    this.registrations.add(
      {
        appName: r.appName,
        instanceId: r.instanceId ?? DEFAULT_INSTANCE_ID,
        environment: r.environment ?? undefined,
        sdkVersion: r.sdkVersion ?? undefined,
        strategies: r.strategies ?? [],
        started: r.started ?? undefined,
        interval: r.interval ?? undefined,
        ...(chain !== 'too long' && chain.length > 0 ? { chain } : {}),
      },
      false,
      source,
    );
  }

  /** Stops the timer and forwards whatever is pending. */
  close(): Promise<void> {
    return this.forwarder.close();
  }
}

/** The client-usage sizes of every environment together, for `flags_proxy_client_usage_entries`. */
export function usageOfAll(usages: readonly ClientUsage[]): {
  aggregator: { size(): { apps: number; toggles: number; variants: number } };
  registrations: { readonly size: number };
} {
  return {
    aggregator: {
      size: () => {
        const total = { apps: 0, toggles: 0, variants: 0 };
        for (const usage of usages) {
          const size = usage.aggregator.size();
          total.apps += size.apps;
          total.toggles += size.toggles;
          total.variants += size.variants;
        }
        return total;
      },
    },
    registrations: {
      get size() {
        return usages.reduce((sum, usage) => sum + usage.registrations.size, 0);
      },
    },
  };
}
