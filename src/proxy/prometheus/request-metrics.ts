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
  return (req, res, next) => {
    const startedAt = process.hrtime.bigint();
    let route = UNMATCHED_ROUTE;
    captureRouteTemplate(req, (template) => {
      route = template;
    });
    let recorded = false;
    const record = () => {
      if (recorded) return;
      recorded = true;
      const labels = {
        method: KNOWN_METHODS.has(req.method) ? req.method : 'OTHER',
        route,
        status: String(res.statusCode),
      };
      metrics.requests.inc(labels);
      metrics.requestDuration.observe(labels, Number(process.hrtime.bigint() - startedAt) / 1e9);
    };
    res.once('finish', record);
    res.once('close', record);
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
