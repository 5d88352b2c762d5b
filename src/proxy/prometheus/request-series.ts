import type { Metric, Registry } from 'prom-client';

type Labels = { method: string; route: string; status: string };

/** Requests of one (method, route template, status): a count, a duration sum and bucket counts. */
export class RequestSeriesEntry {
  count = 0;
  sum = 0;
  /** Per bucket, not cumulative; the last one is `+Inf`. */
  readonly buckets: Float64Array;

  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
  ) {
    this.buckets = new Float64Array(bounds.length + 1);
  }

  observe(seconds: number): void {
    this.count += 1;
    this.sum += seconds;
    let i = 0;
    while (i < this.bounds.length && seconds > this.bounds[i]) i += 1;
    this.buckets[i] += 1;
  }
}

const SERIES_HELP = {
  requests: 'HTTP requests answered, by method, route template and status',
  duration: 'Time to answer HTTP requests, by method, route template and status',
};

/**
 * `flags_proxy_http_requests_total` (counter) and `flags_proxy_http_request_duration_seconds`
 * (histogram), kept as plain numbers per label set and handed to the prom-client registry as two
 * metrics that are read at scrape time. prom-client's own Counter and Histogram hash the label
 * object on every `inc`/`observe`, even through a `labels()` child; that was a measurable share of
 * a 304's cost, and every request records both. The exposition is the one prom-client prints.
 */
export class RequestSeries {
  private readonly entries = new Map<string, RequestSeriesEntry>();

  constructor(
    private readonly names: { requests: string; duration: string },
    /** Upper bounds of the duration buckets, in seconds (`+Inf` is the last bucket, not listed). */
    readonly bounds: readonly number[],
  ) {}

  /** Every entry, as recorded so far (the status page's sampler reads them; nothing is copied). */
  forEachEntry(visit: (entry: RequestSeriesEntry) => void): void {
    for (const entry of this.entries.values()) visit(entry);
  }

  /** The entry of a label set, created on first use; keep it to record without a lookup. */
  entry(method: string, route: string, status: number): RequestSeriesEntry {
    const key = `${method} ${route} ${status}`;
    let found = this.entries.get(key);
    if (!found) {
      found = new RequestSeriesEntry({ method, route, status: String(status) }, this.bounds);
      this.entries.set(key, found);
    }
    return found;
  }

  /** Every label set recorded so far, read at scrape time (Unleash Edge's names of the same requests). */
  recorded(): IterableIterator<RequestSeriesEntry> {
    return this.entries.values();
  }

  /** The upper bounds of the duration buckets, in seconds (the last bucket, `+Inf`, not included). */
  get bucketBounds(): readonly number[] {
    return this.bounds;
  }

  /** Registers both series in `registry`. */
  register(registry: Registry): void {
    const entries = () => [...this.entries.values()];
    const reset = () => this.entries.clear();
    const counter = {
      name: this.names.requests,
      help: SERIES_HELP.requests,
      type: 'counter',
      aggregator: 'sum',
      get: () =>
        Promise.resolve({
          name: this.names.requests,
          help: SERIES_HELP.requests,
          type: 'counter',
          aggregator: 'sum',
          values: entries().map((e) => ({ labels: e.labels, value: e.count })),
        }),
      reset,
    };
    const histogram = {
      name: this.names.duration,
      help: SERIES_HELP.duration,
      type: 'histogram',
      aggregator: 'sum',
      get: () =>
        Promise.resolve({
          name: this.names.duration,
          help: SERIES_HELP.duration,
          type: 'histogram',
          aggregator: 'sum',
          values: entries().flatMap((e) => this.histogramValues(e)),
        }),
      reset,
    };
    // The registry reads a metric only through name, help, type, aggregator, get() and reset().
    registry.registerMetric(counter as unknown as Metric);
    registry.registerMetric(histogram as unknown as Metric);
  }

  private histogramValues(e: RequestSeriesEntry) {
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    let cumulative = 0;
    this.bounds.forEach((bound, i) => {
      cumulative += e.buckets[i];
      values.push({
        labels: { le: bound, ...e.labels },
        value: cumulative,
        metricName: `${this.names.duration}_bucket`,
      });
    });
    values.push({
      labels: { le: '+Inf', ...e.labels },
      value: e.count,
      metricName: `${this.names.duration}_bucket`,
    });
    values.push({ labels: e.labels, value: e.sum, metricName: `${this.names.duration}_sum` });
    values.push({ labels: e.labels, value: e.count, metricName: `${this.names.duration}_count` });
    return values;
  }
}
