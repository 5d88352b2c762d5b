import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError, NoAccessError, NotReady } from '../../common/errors/http-errors';
import { sendError, type ErrorAnswers } from '../../common/http/error-middleware';
import type { NodeMiddleware } from '../../common/http/node-middleware';
import { withVary } from '../../common/http/vary';
import type { CorsHeaderMemo } from '../cors/cors-headers';
import type { ScopeServing } from '../environments/environment';
import { UNMATCHED_ROUTE, type RequestMetrics } from '../prometheus/request-metrics';
import type { Call, Endpoint } from './endpoint';
import { RequestBody } from './request-body';

export interface GateOptions {
  /** ALLOW_LIST / DENY_LIST on the client address; none without lists. */
  allowed?: (req: IncomingMessage) => boolean;
  /** Readiness of the proxy: true once some environment holds definitions. */
  ready: { isReady(): boolean };
  /** The app's CORS middleware, and what it sets on a simple request, per origin. */
  cors: NodeMiddleware;
  corsHeaders: CorsHeaderMemo;
  /** Request series (`flags_proxy_http_requests_total`, durations). */
  requestMetrics: RequestMetrics;
  /** The body step's limit, unless an endpoint declares its own. */
  maxBodySize: number;
  /** The response middleware of answers with a body (compression). */
  bodyResponse: readonly NodeMiddleware[];
  /** The standard error shape. */
  errors: ErrorAnswers;
}

/** `Call.cors` when the CORS middleware set its headers on the response itself. */
const CORS_ON_RESPONSE: readonly string[] = Object.freeze([]);
const ADDRESS_REFUSED = new NoAccessError(
  'Requests from this address are not accepted (ALLOW_LIST / DENY_LIST)',
);
const NOT_READY = 'flags-proxy is not ready: it has not yet synchronised flag definitions with the upstream';

/**
 * The gate every request passes, once, in this order: the address lists (403), CORS headers (a
 * preflight is answered here), readiness, the key → scope step, the request series (labelled by
 * route from here; a refusal before is `unmatched`), the body, then the endpoint, with compression
 * for answers with a body and the endpoint's error shape for anything that fails. Each step is
 * written here only; each is synchronous when it can be: a known key and a plain body answer
 * without a promise.
 */
export class Gate {
  private readonly bodies = new Map<number, RequestBody>();

  constructor(private readonly options: GateOptions) {}

  /** Runs the gate and the endpoint for a request the front matched. */
  pass(call: MutableCall, endpoint: Endpoint, label: string): void {
    const { req, res } = call;
    // ALLOW_LIST / DENY_LIST before anything else, as the app's first middleware does it
    if (this.options.allowed?.(req) === false) {
      sendError(res, ADDRESS_REFUSED);
      return;
    }
    const cors =
      endpoint.ownHeaders === true && req.method !== 'OPTIONS'
        ? this.options.corsHeaders.headersFor(req.headers.origin)
        : undefined;
    if (cors) call.cors = cors;
    else {
      // what the memo cannot tell, and every response of the other endpoints: on the response itself
      call.cors = CORS_ON_RESPONSE;
      let passed = false;
      this.options.cors(req, res, () => {
        passed = true;
      });
      if (!passed) {
        // a preflight, answered by the CORS step
        this.record(call, UNMATCHED_ROUTE);
        return;
      }
    }
    if (endpoint.needsReady && !this.options.ready.isReady()) {
      res.setHeader('Retry-After', '1');
      this.refuse(call, endpoint, new NotReady(NOT_READY));
      return;
    }
    const key = endpoint.key;
    if (key === undefined) {
      this.admitted(call, endpoint, label);
      return;
    }
    const now = key.now(call);
    if (now !== undefined) {
      this.keyed(call, endpoint, label, now);
      return;
    }
    key.later(call).then(
      (later) => this.keyed(call, endpoint, label, later),
      (err: unknown) => this.refuse(call, endpoint, err),
    );
  }

  private keyed(call: MutableCall, endpoint: Endpoint, label: string, found: ScopeServing | HttpError): void {
    if (found instanceof HttpError) {
      this.refuse(call, endpoint, found);
      return;
    }
    call.scope = found;
    this.admitted(call, endpoint, label);
  }

  /** From here the request is the route's: series labelled by it, then the body and the endpoint. */
  private admitted(call: MutableCall, endpoint: Endpoint, label: string): void {
    call.label = endpoint.fallback === true ? UNMATCHED_ROUTE : label;
    try {
      call.params = decodeParams(call.rawParams);
    } catch (err) {
      this.fail(call, endpoint, err);
      this.record(call);
      return;
    }
    if (!endpoint.jsonBody || call.req.method !== 'POST') {
      this.serve(call, endpoint);
      return;
    }
    this.bodyStep(endpoint.bodyLimit ?? this.options.maxBodySize).read(call.req, call.res, (err, body) => {
      if (err !== undefined) {
        this.fail(call, endpoint, err);
        this.record(call);
        return;
      }
      call.body = body;
      this.serve(call, endpoint);
    });
  }

  private bodyStep(limit: number): RequestBody {
    let step = this.bodies.get(limit);
    if (step === undefined) this.bodies.set(limit, (step = new RequestBody(limit)));
    return step;
  }

  /** The endpoint's answer, and its series entry once the response is written (or closed). */
  private serve(call: MutableCall, endpoint: Endpoint): void {
    try {
      if (endpoint.ownHeaders !== true) call.bodyFollows();
      const answered = endpoint.serve(call);
      if (answered) answered.catch((err: unknown) => this.fail(call, endpoint, err));
    } catch (err) {
      this.fail(call, endpoint, err);
    }
    if (call.res.writableEnded) this.record(call);
    else call.res.once('close', () => this.record(call));
  }

  private record(call: MutableCall, label = call.label): void {
    this.options.requestMetrics.record(call.req.method ?? 'GET', label, call.res.statusCode, call.startedAt);
  }

  /**
   * A refusal before the route is the request's: series label `unmatched`. One of ours in the
   * standard shape is written in one go, with the headers the middleware would add (refusing must
   * cost less than answering).
   */
  private refuse(call: MutableCall, endpoint: Endpoint, err: unknown): void {
    if (
      endpoint.errors === undefined &&
      err instanceof HttpError &&
      call.cors !== CORS_ON_RESPONSE &&
      !call.res.headersSent
    )
      sendError(call.res, err, withVary(call.cors, 'Accept-Encoding'));
    else this.fail(call, endpoint, err);
    if (call.res.writableEnded) this.record(call, UNMATCHED_ROUTE);
    else call.res.once('close', () => this.record(call, UNMATCHED_ROUTE));
  }

  /** Answers a failure in the endpoint's shape, as the app's middleware would have: CORS, compression, error. */
  private fail(call: MutableCall, endpoint: Endpoint, err: unknown): void {
    const { req, res } = call;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const cors = call.cors;
    for (let i = 0; i < cors.length; i += 2) res.setHeader(cors[i], cors[i + 1]);
    call.bodyFollows();
    if (endpoint.errors?.(err, call)) return;
    this.options.errors.answer(err, req, call.mountPath + call.path, res);
  }

  /** `call.bodyFollows()`: the response middleware of answers with a body, run synchronously. */
  bodyFollows(req: IncomingMessage, res: ServerResponse): void {
    for (const middleware of this.options.bodyResponse) {
      let passed = false;
      middleware(req, res, (err?: unknown) => {
        passed = err === undefined;
      });
      if (!passed) throw new Error('front: a response middleware did not pass the request on synchronously');
    }
  }
}

/** A call as the front makes it: its raw path parameters and start time besides what endpoints read. */
export interface MutableCall extends Call {
  readonly rawParams: Readonly<Record<string, string>>;
  readonly startedAt: number;
  /** The series label, once the key step admitted the request. */
  label: string;
}

const NONE: Readonly<Record<string, string>> = Object.freeze({});

function decodeParams(raw: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  let decoded: Record<string, string> | undefined;
  for (const name in raw) {
    decoded ??= {};
    decoded[name] = decodeURIComponent(raw[name]);
  }
  return decoded ?? NONE;
}
