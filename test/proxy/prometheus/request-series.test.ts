import fc from 'fast-check';
import { Counter, Histogram, Registry } from 'prom-client';
import { RequestSeries } from '../../../src/proxy/prometheus/request-series';

const NAMES = {
  requests: 'flags_proxy_http_requests_total',
  duration: 'flags_proxy_http_request_duration_seconds',
};
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const HELP = {
  requests: 'HTTP requests answered, by method, route template and status',
  duration: 'Time to answer HTTP requests, by method, route template and status',
};

describe('RequestSeries', () => {
  test('prints exactly what prom-client’s Counter and Histogram print for the same observations', async () => {
    const observation = fc.record({
      method: fc.constantFrom('GET', 'POST', 'OTHER'),
      route: fc.constantFrom('/proxy', '/proxy/all', 'unmatched'),
      status: fc.constantFrom(200, 304, 401, 404),
      // bucket bounds themselves, values between them and beyond the last
      seconds: fc.oneof(fc.constantFrom(...BUCKETS, 0, 7), fc.double({ min: 0, max: 10, noNaN: true })),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 60 }), async (observations) => {
        const ours = new Registry();
        const series = new RequestSeries(NAMES, BUCKETS);
        series.register(ours);
        const theirs = new Registry();
        const labelNames = ['method', 'route', 'status'] as const;
        const counter = new Counter({
          name: NAMES.requests,
          help: HELP.requests,
          labelNames,
          registers: [theirs],
        });
        const histogram = new Histogram({
          name: NAMES.duration,
          help: HELP.duration,
          labelNames,
          buckets: BUCKETS,
          registers: [theirs],
        });
        for (const o of observations) {
          series.entry(o.method, o.route, o.status).observe(o.seconds);
          const labels = { method: o.method, route: o.route, status: String(o.status) };
          counter.inc(labels);
          histogram.observe(labels, o.seconds);
        }
        expect(await ours.metrics()).toBe(await theirs.metrics());
        ours.resetMetrics();
        expect(await ours.metrics()).toBe(
          `# HELP ${NAMES.requests} ${HELP.requests}\n# TYPE ${NAMES.requests} counter\n\n` +
            `# HELP ${NAMES.duration} ${HELP.duration}\n# TYPE ${NAMES.duration} histogram\n`,
        );
      }),
      { numRuns: 200 },
    );
  });
});
