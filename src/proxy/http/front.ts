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
 * The one entry of every request an endpoint serves: it finds the endpoint by method and path,
 * and runs the gate (`gate.ts`) in front of it. What no endpoint serves (the docs UI, preflights,
 * unknown paths) is left to the Express app, whose middleware and error handler answer it.
 *
 * Two ways in, the same front: `middleware` is the Express app's first middleware (an app mounted
 * in a host Express app, or given to `http.createServer` as is); `listener(app)` is a server's
 * request listener that reaches Express only for what no endpoint serves (`start()` and cluster
 * workers use it, so the endpoints' requests do not pay for Express's request set-up).
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

  /** Serves a request when an endpoint answers its method and path; false otherwise (nothing written). */
  serve(req: IncomingMessage, res: ServerResponse): boolean {
    let url = req.url ?? '/';
    if (url.charCodeAt(0) !== SLASH) {
      // The absolute form (`GET http://host/api/frontend`): read, and handed on, as its origin form.
      const origin = splitTarget(url)?.origin;
      if (origin === undefined) return false;
      url = req.url = origin;
    }
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const match = this.table.match(req.method ?? 'GET', path);
    if (match === undefined) return false;
    const mountPath = (req as { baseUrl?: string }).baseUrl ?? '';
    const { endpoint, label } = match.target;
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

  /** The front as the Express app's first middleware. */
  readonly middleware = (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    if (!this.serve(req, res)) next();
  };

  /** The front as a server's request listener, handing what no endpoint serves to `app`. */
  listener(app: RequestListener): RequestListener {
    return (req, res) => {
      if (!this.serve(req, res)) app(req, res);
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

  bodyFollows(): void {
    this.gate.bodyFollows(this.req, this.res);
  }
}
