import type { RequestSeries } from '../prometheus/request-series';
import type { TokenValidator } from '../token-validation/token-validator';
import { REQUEST_KINDS, STATUS_CLASSES, requestKind, statusClass, type RequestKind } from './request-kinds';

/** One sample every 5 s … */
export const SAMPLE_INTERVAL_MS = 5_000;
/** … for 15 minutes: the ring never holds more. */
export const SAMPLES_KEPT = (15 * 60 * 1000) / SAMPLE_INTERVAL_MS;

const KINDS = REQUEST_KINDS.length;
const CLASSES = STATUS_CLASSES.length;
/** Kinds whose answers count in the share answered 304 (evaluations a client may revalidate). */
const REVALIDATED: ReadonlySet<RequestKind> = new Set(['frontend API', 'OFREP', 'client API']);
/** Long-lived answers: their durations would drown the latency quantiles. */
const NOT_TIMED: ReadonlySet<RequestKind> = new Set(['change streams']);

/** Counters read at one moment: cumulative since start, except the gauges. */
interface Sample {
  /** Epoch ms. */
  t: number;
  /** Requests per kind × status class (kind-major), cumulative. */
  requests: Float64Array;
  /** Requests per duration bucket (the last is +Inf), timed kinds together, cumulative. */
  buckets: Float64Array;
  /** GET answers of revalidated kinds, and those of them answered 304, cumulative. */
  revalidatable: number;
  notModified: number;
  /** Requests shed by a bound of the validation queue (503), cumulative. */
  shed: number;
  /** Gauges: requests waiting for a validation, unknown tokens queued. */
  waiters: number;
  queued: number;
}

export interface SeriesOfKind {
  kind: RequestKind;
  status: string;
  /** Requests per second between a point and the one before (the first point: null). */
  perSecond: Array<number | null>;
}

/** The plots' data: one x axis (epoch seconds) shared by every series. */
export interface StatusPlots {
  intervalSeconds: number;
  t: number[];
  requests: SeriesOfKind[];
  /** Milliseconds, estimated from the duration buckets as Prometheus' histogram_quantile does. */
  p50: Array<number | null>;
  p99: Array<number | null>;
  /** Share of revalidatable GET answers that were 304, 0…1. */
  notModifiedShare: Array<number | null>;
  validationWaiters: number[];
  validationQueued: number[];
  validationShedPerSecond: Array<number | null>;
}

/** Cumulative requests of one kind and status class, as the request series has them now. */
export interface RequestTotal {
  kind: RequestKind;
  status: string;
  count: number;
}

/**
 * Samples counters that already exist (the request series, the validator's counts) into a ring of
 * `SAMPLES_KEPT` samples, one per `SAMPLE_INTERVAL_MS`, on an unref'd timer that only reads them:
 * nothing on the request path changes. Rates and quantiles are computed when the page asks.
 */
export class StatusSampler {
  private readonly ring: Array<Sample | undefined> = new Array<Sample | undefined>(SAMPLES_KEPT);
  private next = 0;
  private held = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly series: RequestSeries,
    private readonly validator: TokenValidator | undefined,
  ) {
    this.store(this.read());
    this.timer = setInterval(() => this.store(this.read()), SAMPLE_INTERVAL_MS);
    this.timer.unref();
  }

  private store(sample: Sample): void {
    this.ring[this.next] = sample;
    this.next = (this.next + 1) % SAMPLES_KEPT;
    this.held = Math.min(this.held + 1, SAMPLES_KEPT);
  }

  private read(): Sample {
    const requests = new Float64Array(KINDS * CLASSES);
    const buckets = new Float64Array(this.series.bounds.length + 1);
    let revalidatable = 0;
    let notModified = 0;
    this.series.forEachEntry((entry) => {
      const kind = requestKind(entry.labels.route);
      const status = statusClass(entry.labels.status);
      requests[REQUEST_KINDS.indexOf(kind) * CLASSES + STATUS_CLASSES.indexOf(status)] += entry.count;
      if (!NOT_TIMED.has(kind)) for (let i = 0; i < buckets.length; i++) buckets[i] += entry.buckets[i];
      if (entry.labels.method === 'GET' && REVALIDATED.has(kind)) {
        revalidatable += entry.count;
        if (status === '304') notModified += entry.count;
      }
    });
    const validator = this.validator;
    return {
      t: Date.now(),
      requests,
      buckets,
      revalidatable,
      notModified,
      shed: validator?.shed ?? 0,
      waiters: validator?.waiters ?? 0,
      queued: validator?.pendingTokens.queued ?? 0,
    };
  }

  /** The samples kept, oldest first, then the counters as they are now (from a second after the last sample). */
  private points(): Sample[] {
    const kept: Sample[] = [];
    for (let i = 0; i < this.held; i++) {
      const sample = this.ring[(this.next - this.held + i + SAMPLES_KEPT) % SAMPLES_KEPT];
      if (sample) kept.push(sample);
    }
    const now = this.read();
    const last = kept[kept.length - 1];
    // the counters now, unless a sample was just taken (a point of its own needs time to rate over)
    if (last === undefined || now.t - last.t >= 1_000) kept.push(now);
    return kept;
  }

  /** Cumulative requests by kind and status class now (only those with any). */
  totals(): RequestTotal[] {
    const now = this.read();
    const out: RequestTotal[] = [];
    REQUEST_KINDS.forEach((kind, k) =>
      STATUS_CLASSES.forEach((status, c) => {
        const count = now.requests[k * CLASSES + c];
        if (count > 0) out.push({ kind, status, count });
      }),
    );
    return out;
  }

  plots(): StatusPlots {
    const points = this.points();
    const rate = (pick: (s: Sample) => number) =>
      points.map((s, i) => {
        if (i === 0) return null;
        const seconds = (s.t - points[i - 1].t) / 1000;
        return seconds > 0 ? Math.max(0, pick(s) - pick(points[i - 1])) / seconds : null;
      });
    const requests: SeriesOfKind[] = [];
    REQUEST_KINDS.forEach((kind, k) =>
      STATUS_CLASSES.forEach((status, c) => {
        const at = k * CLASSES + c;
        const perSecond = rate((s) => s.requests[at]);
        if (perSecond.some((v) => v !== null && v > 0)) requests.push({ kind, status, perSecond });
      }),
    );
    const quantile = (q: number) =>
      points.map((s, i) =>
        i === 0 ? null : bucketQuantile(q, this.series.bounds, s.buckets, points[i - 1].buckets),
      );
    return {
      intervalSeconds: SAMPLE_INTERVAL_MS / 1000,
      t: points.map((s) => Math.round(s.t / 10) / 100),
      requests,
      p50: quantile(0.5),
      p99: quantile(0.99),
      notModifiedShare: points.map((s, i) => {
        if (i === 0) return null;
        const answered = s.revalidatable - points[i - 1].revalidatable;
        return answered > 0 ? (s.notModified - points[i - 1].notModified) / answered : null;
      }),
      validationWaiters: points.map((s) => s.waiters),
      validationQueued: points.map((s) => s.queued),
      validationShedPerSecond: rate((s) => s.shed),
    };
  }

  close(): void {
    clearInterval(this.timer);
  }
}

/**
 * The `q` quantile in milliseconds of the requests between two cumulative bucket samples, linear
 * inside the bucket it falls in (as `histogram_quantile`); the +Inf bucket answers the last bound.
 */
export function bucketQuantile(
  q: number,
  bounds: readonly number[],
  now: Float64Array,
  before: Float64Array,
): number | null {
  let total = 0;
  for (let i = 0; i < now.length; i++) total += now[i] - before[i];
  if (total <= 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < now.length; i++) {
    const inBucket = now[i] - before[i];
    if (seen + inBucket >= rank && inBucket > 0) {
      if (i >= bounds.length) return bounds[bounds.length - 1] * 1000;
      const lower = i === 0 ? 0 : bounds[i - 1];
      return (lower + (bounds[i] - lower) * ((rank - seen) / inBucket)) * 1000;
    }
    seen += inBucket;
  }
  return bounds[bounds.length - 1] * 1000;
}
