import type { Logger } from '../../common/logging/logger';
import { RateLimitedLog } from '../../common/logging/rate-limited-log';
import type { PendingRegistrations, Registration } from './pending-registrations';
import type { UpstreamPath, UpstreamPost } from './upstream-transport';
import type { UsageAggregator, UsageBucket } from './usage-aggregator';

export type ForwardResult = 'accepted' | 'rejected' | 'failed';

export interface ForwarderOptions {
  aggregator: UsageAggregator;
  registrations: PendingRegistrations;
  send: UpstreamPost;
  /** The proxy's instance id: forwarded buckets are sums over many client instances. */
  instanceId: string;
  /** Milliseconds between forwards; 0 never forwards on a timer (only on `flush()`). */
  intervalMs: number;
  /** Up to this many milliseconds are added at random to each interval. */
  jitterMs: number;
  logger: Logger;
  /** Called once per forwarded request, for the Prometheus counters. */
  onForward?: (path: UpstreamPath, result: ForwardResult) => void;
}

/** Requests to the upstream that run at the same time during one forward. */
const CONCURRENCY = 8;

async function eachLimited<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, worker));
}

/**
 * Forwards the aggregated client usage upstream every interval (+ jitter): first the pending
 * registrations, then one metrics bucket per app, under that app's own name. What the upstream does
 * not accept (non-2xx or a network error) is merged back and goes with the next forward, within the
 * aggregator's bounds. Forwards never overlap; `close()` stops the timer and forwards what is left.
 */
export class MetricsForwarder {
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly log: RateLimitedLog;

  constructor(private readonly opts: ForwarderOptions) {
    this.log = new RateLimitedLog(opts.logger, 60_000);
  }

  start(): void {
    this.schedule();
  }

  private schedule(): void {
    if (this.closed || this.opts.intervalMs <= 0) return;
    const delay = this.opts.intervalMs + Math.floor(Math.random() * this.opts.jitterMs);
    this.timer = setTimeout(() => {
      void this.flush().finally(() => this.schedule());
    }, delay);
    this.timer.unref();
  }

  /** Forwards everything pending now; resolves when the upstream answered (or failed). Never rejects. */
  flush(): Promise<void> {
    this.chain = this.chain
      .then(() => this.forwardOnce())
      .catch((err: unknown) => this.opts.logger.error(`forwarding usage metrics failed: ${String(err)}`));
    return this.chain;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.flush();
  }

  private async forwardOnce(): Promise<void> {
    const registrations = this.opts.registrations.drain();
    await eachLimited(registrations, async (r) => {
      if (!(await this.send('client/register', r.appName, () => registrationBody(r))))
        this.opts.registrations.add(r, true);
    });
    const buckets = this.opts.aggregator.drain();
    await eachLimited(buckets, async (b) => {
      if (!(await this.send('client/metrics', b.appName, () => this.metricsBody(b))))
        this.opts.aggregator.add(b);
    });
  }

  /** True when the upstream accepted the body. */
  private async send(
    path: UpstreamPath,
    appName: string,
    body: () => Record<string, unknown>,
  ): Promise<boolean> {
    let result: ForwardResult;
    try {
      const status = await this.opts.send(path, appName, body());
      result = status >= 200 && status < 300 ? 'accepted' : 'rejected';
      if (result === 'rejected') {
        this.log.warn(
          `upstream answered HTTP ${status} to forwarded ${path}; keeping the counts for the next interval`,
          `${path}:${status}`,
        );
      }
    } catch (err) {
      result = 'failed';
      const message = err instanceof Error ? err.message : String(err);
      this.log.warn(
        `forwarding ${path} upstream failed (${message}); keeping the counts for the next interval`,
        `${path}:error`,
      );
    }
    this.opts.onForward?.(path, result);
    return result === 'accepted';
  }

  private metricsBody(b: UsageBucket): Record<string, unknown> {
    return {
      appName: b.appName,
      instanceId: this.opts.instanceId,
      ...(b.environment ? { environment: b.environment } : {}),
      bucket: {
        start: new Date(b.start).toISOString(),
        stop: new Date(b.stop).toISOString(),
        toggles: b.toggles,
      },
    };
  }
}

function registrationBody(r: Registration): Record<string, unknown> {
  return {
    appName: r.appName,
    instanceId: r.instanceId,
    ...(r.environment ? { environment: r.environment } : {}),
    ...(r.sdkVersion ? { sdkVersion: r.sdkVersion } : {}),
    strategies: r.strategies,
    ...(r.started !== undefined ? { started: new Date(r.started).toISOString() } : {}),
    ...(r.interval !== undefined ? { interval: r.interval } : {}),
  };
}
