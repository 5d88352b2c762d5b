import type { HttpOptions } from '../upstream/sdk/types';
import type { ProxyConfig } from '../config/types';
import { MetricsForwarder, type ForwardResult } from './forwarder';
import { DEFAULT_MAX_REGISTRATIONS, PendingRegistrations } from './pending-registrations';
import type { ClientMetricsPayload, ClientRegistrationPayload } from './schemas';
import { sdkTransport, type UpstreamPath, type UpstreamPost } from './upstream-transport';
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

  constructor(opts: ClientUsageOptions) {
    const { config } = opts;
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
      intervalMs: config.metricsInterval,
      jitterMs: config.metricsJitter,
      logger: config.logger,
      onForward: opts.onForward,
      onDrop: opts.onDrop,
    });
    this.forwarder.start();
  }

  /** `source`: the client's address; it bounds how many app slots one client can take per interval. */
  recordMetrics(m: ClientMetricsPayload, source?: string): void {
    if (!this.enabled || !m.bucket) return;
    this.aggregator.add(
      {
        appName: m.appName,
        environment: m.environment ?? undefined,
        start: m.bucket.start,
        stop: m.bucket.stop,
        toggles: m.bucket.toggles,
      },
      source,
    );
  }

  recordRegistration(r: ClientRegistrationPayload, source?: string): void {
    if (!this.enabled) return;
    this.registrations.add(
      {
        appName: r.appName,
        instanceId: r.instanceId ?? DEFAULT_INSTANCE_ID,
        environment: r.environment ?? undefined,
        sdkVersion: r.sdkVersion ?? undefined,
        strategies: r.strategies ?? [],
        started: r.started ?? undefined,
        interval: r.interval ?? undefined,
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
