import type { Metric, Registry } from 'prom-client';
import type { EdgeIdentity } from './edge-series';
import type { RequestSeries } from './request-series';

const REQUESTS = 'http_requests_total';
const DURATION = 'http_server_duration_milliseconds';
const REQUESTS_HELP = 'Total number of HTTP requests';
const DURATION_HELP = 'HTTP request latencies in milliseconds';
/** Edge's endpoint of every 404, so unknown paths cannot multiply label values. */
const UNKNOWN_ENDPOINT = '/{unknown}';

type Labels = Record<string, string | number>;
interface Sample {
  labels: Labels;
  value: number;
  metricName?: string;
}

interface Summed {
  labels: Labels;
  count: number;
  sum: number;
  buckets: Float64Array;
}

/** Milliseconds of a bound in seconds, without the float noise of `0.0025 * 1000`. */
const ms = (seconds: number): number => Math.round(seconds * 1e6) / 1e3;

/**
 * Unleash Edge's request series, `http_requests_total` (counter) and
 * `http_server_duration_milliseconds` (histogram, milliseconds), labelled as Edge labels them
 * (`method`, `endpoint`, `status`, `app_name`, `instance_id`). They are the requests of
 * `flags_proxy_http_requests_total` and `flags_proxy_http_request_duration_seconds`, read from the
 * same counts at scrape time (nothing more is recorded per request): the endpoint is our route
 * template, every 404 is `/{unknown}`, and the backstage is left out, as Edge leaves it out. The
 * buckets are ours in milliseconds (1 ms to 5 s), not Edge's.
 */
export function registerEdgeRequestSeries(
  registry: Registry,
  series: RequestSeries,
  identity: EdgeIdentity,
): void {
  const summed = (): Summed[] => {
    const byLabels = new Map<string, Summed>();
    const size = series.bucketBounds.length + 1;
    for (const entry of series.recorded()) {
      const { method, route, status } = entry.labels;
      if (route.includes('/internal-backstage')) continue;
      const endpoint = status === '404' ? UNKNOWN_ENDPOINT : route;
      const key = `${method} ${endpoint} ${status}`;
      let found = byLabels.get(key);
      if (!found) {
        const labels = {
          method,
          endpoint,
          status,
          app_name: identity.appName,
          instance_id: identity.instanceId,
        };
        found = { labels, count: 0, sum: 0, buckets: new Float64Array(size) };
        byLabels.set(key, found);
      }
      found.count += entry.count;
      found.sum += entry.sum;
      for (let i = 0; i < size; i++) found.buckets[i] += entry.buckets[i];
    }
    return [...byLabels.values()];
  };
  const histogramSamples = (s: Summed): Sample[] => {
    const samples: Sample[] = [];
    let cumulative = 0;
    series.bucketBounds.forEach((bound, i) => {
      cumulative += s.buckets[i];
      samples.push({
        labels: { le: ms(bound), ...s.labels },
        value: cumulative,
        metricName: `${DURATION}_bucket`,
      });
    });
    samples.push({ labels: { le: '+Inf', ...s.labels }, value: s.count, metricName: `${DURATION}_bucket` });
    samples.push({ labels: s.labels, value: s.sum * 1000, metricName: `${DURATION}_sum` });
    samples.push({ labels: s.labels, value: s.count, metricName: `${DURATION}_count` });
    return samples;
  };
  const metric = (name: string, help: string, type: string, values: () => Sample[]) => ({
    name,
    help,
    type,
    aggregator: 'sum',
    get: () => Promise.resolve({ name, help, type, aggregator: 'sum', values: values() }),
    // the counts are the request series'; they are reset with it, never from here
    reset: () => undefined,
  });
  // The registry reads a metric only through name, help, type, aggregator, get() and reset().
  registry.registerMetric(
    metric(REQUESTS, REQUESTS_HELP, 'counter', () =>
      summed().map((s) => ({ labels: s.labels, value: s.count })),
    ) as unknown as Metric,
  );
  registry.registerMetric(
    metric(DURATION, DURATION_HELP, 'histogram', () =>
      summed().flatMap(histogramSamples),
    ) as unknown as Metric,
  );
}
