import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { FeatureRepository } from '../upstream/feature-repository';
import { cachedRender } from './cached-render';
import { RequestSeries } from './request-series';

/** What the client-usage metrics report about themselves; kept as a shape to avoid an import cycle. */
export interface ClientUsageSource {
  aggregator: { size(): { apps: number; toggles: number; variants: number } };
  registrations: { readonly size: number };
}

/**
 * The Prometheus series of one proxy app, in the app's own registry (two apps in one process never
 * collide). Labels carry only methods, route templates, statuses and fixed words — never a raw path,
 * a key or a token.
 */
export class ProxyMetrics {
  readonly registry = new Registry();
  private render: () => Promise<string>;
  /** Requests by method, route template and status, with their durations. */
  readonly requestSeries: RequestSeries;
  private readonly clientUsageDropped: Counter<'reason'>;
  private readonly clientUsageForwards: Counter<'path' | 'result'>;
  private clientUsage: ClientUsageSource | undefined;

  /** `cacheMs`: how long a rendered exposition answers further scrapes (`prometheusCacheInterval`). */
  constructor(
    features: FeatureRepository,
    private readonly cacheMs = 0,
  ) {
    this.render = cachedRender(() => this.registry.metrics(), cacheMs);
    const registers = [this.registry];
    const up = new Counter({
      name: 'flags_proxy_up',
      help: 'Set to 1 while the proxy is running',
      registers,
      aggregator: 'max',
    });
    up.inc(1);
    new Gauge({
      name: 'last_metrics_update_epoch_timestamp_ms',
      help: 'Epoch ms of the last time the proxy received a feature update (0 before the first)',
      registers,
      aggregator: 'max',
      collect() {
        this.set(features.stats.lastUpdate);
      },
    });
    new Gauge({
      name: 'last_metrics_fetch_epoch_timestamp_ms',
      help: 'Epoch ms of the last time the proxy checked the upstream for updates (0 before the first)',
      registers,
      aggregator: 'max',
      collect() {
        this.set(features.stats.lastFetch);
      },
    });
    new Gauge({
      name: 'flags_proxy_ready',
      help: '1 once the first synchronisation with the upstream succeeded, 0 before (with workers: 1 once every worker is)',
      registers,
      aggregator: 'min',
      collect() {
        this.set(features.isReady() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'flags_proxy_toggles',
      help: 'Number of toggles the proxy knows',
      registers,
      aggregator: 'max',
      collect() {
        this.set(features.toggles().length);
      },
    });
    new Counter({
      name: 'flags_proxy_upstream_fetch_errors_total',
      help: 'Failed or rejected fetches of flag definitions from the upstream since start (not the SDK reporting one malformed toggle of an answer it stores)',
      registers,
      collect() {
        this.reset();
        this.inc(features.stats.fetchErrors);
      },
    });
    new Counter({
      name: 'flags_proxy_upstream_definitions_refused_total',
      help: 'Answers refused as a whole since start (not a definitions document); the last good definitions stayed in use',
      registers,
      collect() {
        this.reset();
        this.inc(features.stats.definitionsRefused);
      },
    });
    new Gauge({
      name: 'flags_proxy_toggles_quarantined',
      help: 'Toggles of the current definitions whose shape would make evaluation throw: answered disabled, logged once per revision',
      registers,
      aggregator: 'max',
      collect() {
        this.set(features.stats.togglesQuarantined);
      },
    });
    new Counter({
      name: 'flags_proxy_usage_reports_refused_total',
      help: "The proxy's own usage reports the upstream refused (4xx); their counts were dropped and reporting went on",
      registers,
      collect() {
        this.reset();
        this.inc(features.stats.usageReportsRefused);
      },
    });
    this.requestSeries = new RequestSeries(
      { requests: 'flags_proxy_http_requests_total', duration: 'flags_proxy_http_request_duration_seconds' },
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    );
    this.requestSeries.register(this.registry);
    const usage = () => this.clientUsage;
    new Gauge({
      name: 'flags_proxy_client_usage_entries',
      help: 'Entries of client usage metrics held for the next forward, by kind (apps, toggles, variants, registrations)',
      labelNames: ['kind'],
      registers,
      collect() {
        const source = usage();
        const size = source?.aggregator.size() ?? { apps: 0, toggles: 0, variants: 0 };
        this.set({ kind: 'apps' }, size.apps);
        this.set({ kind: 'toggles' }, size.toggles);
        this.set({ kind: 'variants' }, size.variants);
        this.set({ kind: 'registrations' }, source?.registrations.size ?? 0);
      },
    });
    this.clientUsageDropped = new Counter({
      name: 'flags_proxy_client_usage_dropped_total',
      help: 'Client usage metrics dropped: new apps, toggles, variants or registrations beyond a bound, or buckets (metrics_refused) and registrations (registration_refused) the upstream refused with a 4xx, or that failed 10 forwards in a row (metrics_undeliverable, registration_undeliverable)',
      labelNames: ['reason'],
      registers,
    });
    this.clientUsageForwards = new Counter({
      name: 'flags_proxy_client_usage_forwards_total',
      help: 'Requests forwarding client usage metrics upstream, by path and result (accepted; refused: 4xx, dropped; rejected: 5xx, retried; failed: network error, retried)',
      labelNames: ['path', 'result'],
      registers,
    });
    collectDefaultMetrics({ register: this.registry });
  }

  /** The exposition a scrape answers: rendered at most once per `cacheMs`, however many scrapes come. */
  scrape(): Promise<string> {
    return this.render();
  }

  /** Replaces what is rendered (a cluster worker: the primary's aggregate of every worker), cached the same way. */
  renderWith(render: () => Promise<string>): void {
    this.render = cachedRender(render, this.cacheMs);
  }

  /** Reports the size of the client-usage aggregate in `flags_proxy_client_usage_entries`. */
  trackClientUsage(source: ClientUsageSource): void {
    this.clientUsage = source;
  }

  readonly onClientUsageDrop = (reason: string): void => {
    this.clientUsageDropped.inc({ reason });
  };

  readonly onClientUsageForward = (path: string, result: string): void => {
    this.clientUsageForwards.inc({ path, result });
  };

  /** Empties the registry, so nothing keeps a closed app's repository reachable through it. */
  close(): void {
    this.registry.clear();
  }
}
