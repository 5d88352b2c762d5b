import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { splitTarget } from '../../common/http/request-target';
import type { ScopeServing } from '../environments/environment';
import { routeTemplate } from '../prometheus/request-metrics';
import type { Endpoint } from './endpoint';
import type { Gate, MutableCall } from './gate';
import { RouteTable } from './route-table';

const SLASH = 0x2f;

interface Target {
  readonly endpoint: Endpoint;
  /** The series label of the route when the app is not mounted in another one. */
  readonly label: string;
}

/**
 * The one entry of every request: it finds the endpoint by method and path (the declared routes,
 * then the prefixes' fallbacks, the last of them `/*`), and runs the gate (`gate.ts`) in front of
 * it. Preflights are answered by the gate's CORS step; unknown paths by a fallback's 404.
 *
 * Two ways in, the same front: `middleware` is the Express app's only middleware (an app mounted
 * in a host Express app, or given to `http.createServer` as is); `listener(app)` is a server's
 * request listener that reaches Express only for the endpoints that read Express's request
 * (`start()` and cluster workers use it, so the evaluation requests do not pay for Express's
 * request set-up).
 */
export class Front {
  private readonly table = new RouteTable<Target>();

  constructor(
    private readonly gate: Gate,
    endpoints: readonly Endpoint[],
  ) {
    for (const endpoint of endpoints)
      for (const [method, path] of endpoint.routes)
        this.table.add(method, path, { endpoint, label: routeTemplate('', path) });
  }

  /**
   * Serves a request: every method and path is some endpoint's (the last of them answers 404).
   * False only for an endpoint that reads Express's request, when `viaExpress` is false: nothing
   * is written then, and the request is to be handed to the Express app (whose first middleware
   * is this front).
   */
  serve(req: IncomingMessage, res: ServerResponse, viaExpress: boolean): boolean {
    let url = req.url ?? '/';
    if (url.charCodeAt(0) !== SLASH) {
      // The absolute form (`GET http://host/api/frontend`): read, and handed on, as its origin form;
      // a target that is neither is no path of ours (the last endpoint's 404).
      url = req.url = splitTarget(url)?.origin ?? `/${url}`;
    }
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const match = this.table.match(req.method ?? 'GET', path);
    if (match === undefined)
      throw new Error(`front: no endpoint for ${path}; a fallback for '/*' is required`);
    const { endpoint, label } = match.target;
    if (endpoint.express === true && !viaExpress) return false;
    const mountPath = (req as { baseUrl?: string }).baseUrl ?? '';
    const call = new FrontCall(
      req,
      res,
      path,
      q === -1 ? '' : url.slice(q + 1),
      mountPath,
      match.template,
      match.params,
      this.gate,
    );
    this.gate.pass(call, endpoint, mountPath === '' ? label : routeTemplate(mountPath, match.template));
    return true;
  }

  /** The front as the Express app's first (and only) middleware. */
  readonly middleware = (req: IncomingMessage, res: ServerResponse): void => {
    this.serve(req, res, true);
  };

  /** The front as a server's request listener, handing the endpoints that read Express's request to `app`. */
  listener(app: RequestListener): RequestListener {
    return (req, res) => {
      if (!this.serve(req, res, false)) app(req, res);
    };
  }
}

class FrontCall implements MutableCall {
  readonly startedAt = performance.now();
  label = '';
  params: Readonly<Record<string, string>> = {};
  cors: readonly string[] = [];
  key = '';
  scope!: ScopeServing;
  body: unknown = undefined;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly path: string,
    readonly query: string,
    readonly mountPath: string,
    readonly template: string,
    readonly rawParams: Readonly<Record<string, string>>,
    private readonly gate: Gate,
  ) {}

  private followed = false;

  bodyFollows(): void {
    // once: the response middleware wraps the response's methods, a second run would wrap them again
    if (this.followed) return;
    this.followed = true;
    this.gate.bodyFollows(this.req, this.res);
  }
}
