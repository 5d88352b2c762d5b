import { NotFoundError } from '../../../common/errors/http-errors';
import type { Endpoint, RouteRules } from '../endpoint';

/**
 * What no route under `prefixes` answers, for every method: the rules of the room (readiness, its
 * key, its error shape) first, then a 404. `['']` is the app's last fallback: a path of nobody's.
 */
export function notFound(prefixes: readonly string[], rules: RouteRules = {}): Endpoint {
  return {
    needsReady: false,
    jsonBody: false,
    ...rules,
    fallback: true,
    routes: prefixes.map((p) => ['*', `${p.replace(/\/+$/, '')}/*`] as const),
    serve(call) {
      throw new NotFoundError(`No endpoint ${call.req.method ?? 'GET'} ${call.path}`);
    },
  };
}
