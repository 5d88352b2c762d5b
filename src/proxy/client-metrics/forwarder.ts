import type { Logger } from '../../common/logging/logger';
import { RateLimitedLog } from '../../common/logging/rate-limited-log';
import type { PendingRegistrations, Registration } from './pending-registrations';
import type { UpstreamPath, UpstreamPost } from './upstream-transport';
import { joinChains } from './usage-chain';
import type { DropReason, UsageAggregator, UsageBucket } from './usage-aggregator';
import { timerDelay } from '../../common/timers/timer-delay';

/**
 * How the upstream answered one forward: `accepted` (2xx); `refused` (any other status below 500,
 * a 4xx above all: the body will never be accepted, so it is dropped and counted); `rejected` (5xx)
 * and `failed` (network error or timeout), whose counts are kept for the next forward, at most
 * `MAX_FORWARD_ATTEMPTS` times.
 */
export type ForwardResult = 'accepted' | 'refused' | 'rejected' | 'failed';

export interface ForwarderOptions {
  aggregator: UsageAggregator;
  registrations: PendingRegistrations;
  send: UpstreamPost;
  /** The proxy's instance id: forwarded buckets are sums over many client instances. */
  instanceId: string;
  /** This instance's marker, added to the chain of everything it forwards (see `usage-chain.ts`). */
  marker: string;
  /** Milliseconds between forwards; 0 never forwards on a timer (only on `flush()`). */
  intervalMs: number;
  /** Up to this many milliseconds are added at random to each interval. */
  jitterMs: number;
  logger: Logger;
  /** Called once per forwarded request, for the Prometheus counters. */
  onForward?: (path: UpstreamPath, result: ForwardResult) => void;
  /** Called once per bucket or registration dropped because the upstream refused it. */
  onDrop?: (reason: DropReason) => void;
}

/**
 * Forwards a bucket or registration may fail (network error, timeout, 5xx) before it is dropped and
 * counted: 10 intervals, five minutes at the default 30 s, so an upstream restart loses nothing and
 * a payload that can never be delivered does not hold its slot for ever.
 */
export const MAX_FORWARD_ATTEMPTS = 10;

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
 * registrations, then one metrics bucket per app, under that app's own name. What the upstream could
 * not take (a 5xx or a network error) is merged back and goes with the next forward, within the
 * aggregator's bounds; what it refuses (a 4xx) is dropped and counted, so a refused bucket never
 * holds an app's slot or swallows the app's later counts. Forwards never overlap; `close()` stops
 * the timer and forwards what is left.
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
    }, timerDelay(delay));
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
      const result = await this.send('client/register', r.appName, () => registrationBody(r), r.chain);
      if (result === 'refused') this.opts.onDrop?.('registration_refused');
      else if (result === 'accepted') return;
      else if (this.giveUp(r, 'client/register')) this.opts.onDrop?.('registration_undeliverable');
      else this.opts.registrations.add({ ...r, failures: (r.failures ?? 0) + 1 }, true);
    });
    const buckets = this.opts.aggregator.drain();
    await eachLimited(buckets, async (b) => {
      const result = await this.send('client/metrics', b.appName, () => this.metricsBody(b), b.chain);
      if (result === 'refused') this.opts.onDrop?.('metrics_refused');
      else if (result === 'accepted') return;
      else if (this.giveUp(b, 'client/metrics')) this.opts.onDrop?.('metrics_undeliverable');
      else this.opts.aggregator.add({ ...b, failures: (b.failures ?? 0) + 1 });
    });
  }

  /** Whether a payload that failed once more has used up its attempts (and is logged as dropped). */
  private giveUp(payload: { failures?: number }, path: UpstreamPath): boolean {
    if ((payload.failures ?? 0) + 1 < MAX_FORWARD_ATTEMPTS) return false;
    this.log.warn(
      `forwarded ${path} failed ${MAX_FORWARD_ATTEMPTS} times in a row; dropping it (counted in flags_proxy_client_usage_dropped_total)`,
      `${path}:undeliverable`,
    );
    return true;
  }

  private async send(
    path: UpstreamPath,
    appName: string,
    body: () => Record<string, unknown>,
    chain: readonly string[] | undefined,
  ): Promise<ForwardResult> {
    let result: ForwardResult;
    try {
      const status = await this.opts.send(path, appName, body(), joinChains(chain, [this.opts.marker]));
      result = status >= 200 && status < 300 ? 'accepted' : status >= 500 ? 'rejected' : 'refused';
      if (result === 'rejected') {
        this.log.warn(
          `upstream answered HTTP ${status} to forwarded ${path}; keeping the counts for the next interval`,
          `${path}:${status}`,
        );
      } else if (result === 'refused') {
        this.log.warn(
          `upstream refused forwarded ${path} with HTTP ${status}; dropping it (counted in flags_proxy_client_usage_dropped_total)`,
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
    return result;
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
