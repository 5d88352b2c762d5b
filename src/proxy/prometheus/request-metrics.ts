import type { Request, RequestHandler } from 'express';
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
 * route TEMPLATE (raw paths never become labels). `middleware` records every request that passes
 * it; the front's gate calls `record` itself for the requests of its endpoints.
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

  /**
   * Records every request; mount it first. The template is captured when the router assigns
   * `req.route`, because `req.baseUrl` is still the mount path then; when an error leaves the
   * router, Express restores `req.baseUrl` before the response finishes, so reading both at the
   * end would mislabel every error answer.
   */
  readonly middleware: RequestHandler = (req, res, next) => {
    const startedAt = performance.now();
    let route = UNMATCHED_ROUTE;
    captureRouteTemplate(req, (template) => {
      route = template;
    });
    // 'close' follows 'finish' on every response, and also fires for aborted ones.
    res.once('close', () => this.record(req.method, route, res.statusCode, startedAt));
    next();
  };
}

function captureRouteTemplate(req: Request, onRoute: (template: string) => void): void {
  let current: unknown;
  Object.defineProperty(req, 'route', {
    configurable: true,
    enumerable: true,
    get: () => current,
    set: (value: unknown) => {
      current = value;
      const path = (value as { path?: unknown } | undefined)?.path;
      if (typeof path === 'string') onRoute(routeTemplate(req.baseUrl, path));
    },
  });
}
