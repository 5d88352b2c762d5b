import type { RequestSeries, RequestSeriesEntry } from './request-series';

/** Requests that no route matched (404s, and requests refused before routing: 401, 503, preflights). */
export const UNMATCHED_ROUTE = 'unmatched';

const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** `/proxy` + `/` gives `/proxy`; `/proxy` + `/health` gives `/proxy/health`. */
export function routeTemplate(baseUrl: string, path: string): string {
  const joined = `${baseUrl}${path}`.replace(/\/+$/, '');
  // Express matches paths case-insensitively: lowercase so `/PROXY` cannot mint new label values.
  return (joined === '' ? '/' : joined).toLowerCase();
}

/**
 * `flags_proxy_http_requests_total` and `flags_proxy_http_request_duration_seconds`, labelled by
 * route TEMPLATE (raw paths never become labels). The front's gate records every request.
 */
export class RequestMetrics {
  constructor(private readonly series: RequestSeries) {}

  /** Counts one finished request and observes its duration since `startedAt` (`performance.now()`). */
  record(method: string, route: string, status: number, startedAt: number): void {
    this.entry(method, route, status).observe((performance.now() - startedAt) / 1000);
  }

  /** The series entry of one label set, for a caller that records it often. */
  entry(method: string, route: string, status: number): RequestSeriesEntry {
    return this.series.entry(KNOWN_METHODS.has(method) ? method : 'OTHER', route, status);
  }
}
