import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, Express, Request, RequestHandler, Response } from 'express';
import type { AuthenticationRequired } from '../../common/errors/http-errors';
import { sendError } from '../../common/http/error-middleware';
import type { CorsHeaderMemo } from '../cors/cors-headers';
import { routeTemplate, UNMATCHED_ROUTE, type RequestMetrics } from '../prometheus/request-metrics';
import type { FeatureRepository } from '../upstream/feature-repository';
import type { ConnectionMemo } from '../engine/connection-memo';
import type { Selection } from '../engine/evaluator';
import type { EvaluationInput, EvaluationPipeline } from './pipeline';
import { writeReply } from './write-reply';

export interface FastLaneOptions {
  /** The evaluation paths whose `GET /` is served here (`{prefix}/proxy`, …). */
  paths: readonly string[];
  /** Readiness of every environment (the app's readiness step). */
  features: Pick<FeatureRepository, 'isReady'>;
  clientKeysHeaderName: string;
  /**
   * The key step, synchronously (the same answers the app's key middleware gives): what serves the
   * key, a refusal, or undefined when only Express can tell (a key the upstream must be asked about,
   * an environment that cannot be served now).
   */
  resolve: (
    value: string | string[] | undefined,
    connection: object,
  ) => LaneScope | AuthenticationRequired | undefined;
  /**
   * False when the context needs more than the query and the socket address (context enrichers,
   * `trustProxy`): every request then goes through Express.
   */
  enabled: boolean;
  /** The app's request metrics; their middleware is the first of `everyResponse`. */
  requestMetrics: RequestMetrics;
  /** What the app's CORS middleware (the second of `everyResponse`) sets on a GET, per origin. */
  cors: CorsHeaderMemo;
  /** The middleware that follows them for responses with a body (compression); a 304 skips it. */
  bodyResponse: readonly RequestHandler[];
  /** The app's error middleware, for an unexpected failure after the lane took the request. */
  onError: ErrorRequestHandler;
}

/** What serves one key's requests here: its scope's pipeline and per-connection memo. */
export interface LaneScope {
  readonly pipeline: EvaluationPipeline;
  readonly memo: ConnectionMemo;
}

const ENABLED: Selection = { kind: 'enabled' };
/** What the app's compression middleware adds to every response it sees; a refusal skips it. */
const VARY = ['Vary', 'Accept-Encoding'] as const;

type Handle = (req: IncomingMessage, res: ServerResponse, callback?: unknown) => void;

/**
 * `GET` of an evaluation path without Express's router. It is an entry, not a copy: it runs the
 * app's key step, the pipeline's context, evaluation and write steps, and the app's CORS headers
 * (learnt from its own middleware) and request metrics. A connection that asks the same query again
 * reuses its prepared request (`connection-memo.ts`). What it cannot answer by itself (not ready,
 * a malformed query, CORS that does not pass synchronously, mounted in another app) goes to Express
 * untouched. A refused key is answered here: refusing must cost less than answering.
 */
export function installFastLane(app: Express, options: FastLaneOptions): void {
  if (!options.enabled) return;
  const routes = new Map(options.paths.map((p) => [p, routeTemplate(p, '/')]));
  const target = app as unknown as { handle: Handle };
  const handle = target.handle.bind(app);
  target.handle = (req, res, callback) => {
    if (!answer(req, res)) handle(req, res, callback);
  };

  function answer(raw: IncomingMessage, res: ServerResponse): boolean {
    if (raw.method !== 'GET') return false;
    const url = raw.url ?? '';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const route = routes.get(path);
    if (route === undefined) return false;
    const req = raw as Request & { baseUrl?: string };
    if (req.baseUrl) return false; // mounted in another app: route labels and paths are Express's
    if (!options.features.isReady()) return false;
    const cors = options.cors.headersFor(raw.headers.origin);
    if (!cors) return false;
    const startedAt = performance.now();
    const resolved = options.resolve(raw.headers[options.clientKeysHeaderName], raw.socket);
    if (resolved === undefined) return false;
    if (!('pipeline' in resolved)) {
      const refusal = resolved;
      sendError(res, refusal, [...cors, ...VARY]);
      // labelled as the app's key middleware labels it: refused before routing
      options.requestMetrics.record('GET', UNMATCHED_ROUTE, refusal.status, startedAt);
      return true;
    }
    const { pipeline, memo } = resolved;
    const query = q === -1 ? '' : url.slice(q + 1);
    try {
      let prepared = memo.recall(raw.socket, query);
      if (prepared === undefined) {
        let input: EvaluationInput;
        try {
          input = pipeline.fromQuery(query);
        } catch {
          return false; // Express answers the 400
        }
        prepared = pipeline.prepare(ENABLED, pipeline.baseContext(input, raw));
        memo.keep(raw.socket, query, prepared);
      }
      const reply = pipeline.answer(raw, prepared);
      if (reply.notModified) {
        writeReply(res, reply, pipeline.vary, cors);
        options.requestMetrics.record('GET', route, 304, startedAt);
        return true;
      }
      res.once('close', () => options.requestMetrics.record('GET', route, res.statusCode, startedAt));
      pass(options.bodyResponse, req, res as Response);
      writeReply(res, reply, pipeline.vary, cors);
    } catch (err) {
      toExpress(req, res as Response);
      options.onError(err, req, res as Response, () => undefined);
    }
    return true;
  }

  function toExpress(req: Request, res: Response): void {
    req.res = res;
    res.req = req;
    Object.setPrototypeOf(req, app.request);
    Object.setPrototypeOf(res, app.response);
  }
}

function pass(middlewares: readonly RequestHandler[], req: Request, res: Response): void {
  for (const middleware of middlewares) {
    let passed = false;
    void middleware(req, res, (err?: unknown) => {
      passed = err === undefined;
    });
    if (!passed) throw new Error('fast lane: a response middleware did not pass a GET on synchronously');
  }
}
