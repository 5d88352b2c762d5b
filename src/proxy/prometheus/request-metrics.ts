import type { Request, RequestHandler } from 'express';
import type { ProxyMetrics } from './proxy-metrics';

/** Requests that no route matched (404s, and requests refused before routing: 401, 503, preflights). */
export const UNMATCHED_ROUTE = 'unmatched';

const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** `/proxy` + `/` gives `/proxy`; `/proxy` + `/health` gives `/proxy/health`. */
function joinRoute(baseUrl: string, path: string): string {
  const joined = `${baseUrl}${path}`.replace(/\/+$/, '');
  // Express matches paths case-insensitively: lowercase so `/PROXY` cannot mint new label values.
  return (joined === '' ? '/' : joined).toLowerCase();
}

/**
 * Records every request in `flags_proxy_http_requests_total` and
 * `flags_proxy_http_request_duration_seconds`, labelled by route TEMPLATE. Mount it first.
 *
 * The template is captured when the router assigns `req.route`, because `req.baseUrl` is still the
 * mount path then; when an error leaves the router, Express restores `req.baseUrl` before the
 * response finishes, so reading both at the end would mislabel every error answer.
 */
export function requestMetrics(metrics: ProxyMetrics): RequestHandler {
  // Label children looked up once per (method, route, status): prom-client would otherwise hash the
  // label object on every request, which is a measurable share of a 304's cost.
  type Children = { count: { inc(): void }; duration: { observe(value: number): void } };
  const children = new Map<string, Children>();
  const childrenFor = (method: string, route: string, status: string): Children => {
    const key = `${method} ${route} ${status}`;
    let found = children.get(key);
    if (!found) {
      const labels = { method, route, status };
      found = { count: metrics.requests.labels(labels), duration: metrics.requestDuration.labels(labels) };
      children.set(key, found);
    }
    return found;
  };
  return (req, res, next) => {
    const startedAt = process.hrtime.bigint();
    let route = UNMATCHED_ROUTE;
    captureRouteTemplate(req, (template) => {
      route = template;
    });
    // 'close' follows 'finish' on every response, and also fires for aborted ones.
    res.once('close', () => {
      const method = KNOWN_METHODS.has(req.method) ? req.method : 'OTHER';
      const child = childrenFor(method, route, String(res.statusCode));
      child.count.inc();
      child.duration.observe(Number(process.hrtime.bigint() - startedAt) / 1e9);
    });
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
      if (typeof path === 'string') onRoute(joinRoute(req.baseUrl, path));
    },
  });
}
