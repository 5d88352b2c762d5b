import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Express, Request } from 'express';
import { sendError } from '../../common/http/error-middleware';
import { routeTemplate, UNMATCHED_ROUTE } from '../prometheus/request-metrics';
import type { EvaluationInput, EvaluationPipeline } from './pipeline';
import type { FastLaneOptions } from './fast-lane';
import { asExpress, bodyLaneEntry, passOn, readBody, strictJson } from './lane-body';
import { writeReply } from './write-reply';

export interface PostLaneOptions extends FastLaneOptions {
  /** Largest body the Express route parses (`maxBodySize`); a larger one goes to Express for its 413. */
  maxBodySize: number;
}

/** What the app's compression middleware adds to every response it sees; a refusal skips it. */
const VARY = ['Vary', 'Accept-Encoding'] as const;

type Handle = (req: IncomingMessage, res: ServerResponse, callback?: unknown) => void;

/**
 * `POST` of an evaluation path (`{prefix}/proxy`, `{prefix}/api/frontend`) without Express's router
 * and body parser. Like the GET lane (`fast-lane.ts`) it is an entry, not a copy: the app's key
 * step, CORS headers and request metrics, then the pipeline's own input, context, evaluation and
 * write steps. It answers only what it reads exactly as the route would: a plain JSON body (`Content-
 * Type: application/json`, UTF-8, no content coding) with a `Content-Length` within the limit, that
 * parses to a JSON object or array the pipeline accepts. Anything else (a body the route refuses,
 * a JSON or validation error, not ready, CORS that does not pass synchronously) goes to Express: a
 * body already read is put back in front of the request stream first, so Express parses and answers
 * it as if the lane were not there (`test/proxy/post-lane.test.ts` compares the two).
 */
export function installPostLane(app: Express, options: PostLaneOptions): void {
  if (!options.enabled) return;
  const routes = new Map(options.paths.map((p) => [p, routeTemplate(p, '/')]));
  const target = app as unknown as { handle: Handle };
  const handle = target.handle.bind(app);
  target.handle = (req, res, callback) => {
    if (!answer(req, res, () => handle(req, res, callback))) handle(req, res, callback);
  };

  /** False when Express is to take the request untouched; true when the lane took it. */
  function answer(raw: IncomingMessage, res: ServerResponse, toExpressRoute: () => void): boolean {
    if (raw.method !== 'POST') return false;
    const route = routes.get(raw.url ?? '');
    if (route === undefined) return false;
    const entry = bodyLaneEntry(raw, options);
    if (entry === undefined) return false;
    const { length, cors } = entry;
    const req = raw as Request;
    const { headers } = raw;
    const startedAt = performance.now();
    const resolved = options.resolve(headers[options.clientKeysHeaderName], raw.socket);
    if (resolved === undefined) return false; // only Express can tell (a key the upstream is asked about)
    if (!('pipeline' in resolved)) {
      const refusal = resolved;
      sendError(res, refusal, [...cors, ...VARY]);
      // labelled as the app's key middleware labels it: refused before routing
      options.requestMetrics.record('POST', UNMATCHED_ROUTE, refusal.status, startedAt);
      return true;
    }
    readBody(raw, length, (body) => {
      const input = inputOf(resolved.pipeline, body);
      if (input === undefined) {
        // Express reads the same bytes and gives its own answer
        raw.unshift(body);
        toExpressRoute();
        return;
      }
      respond(resolved.pipeline, req, res, input, route, cors, startedAt);
    });
    return true;
  }

  /** The pipeline's input from a body, or undefined when the route would refuse it (Express answers). */
  function inputOf(pipeline: EvaluationPipeline, body: Buffer): EvaluationInput | undefined {
    const parsed = strictJson(body);
    if (parsed === undefined) return undefined;
    try {
      return pipeline.fromBody(parsed);
    } catch {
      return undefined;
    }
  }

  function respond(
    pipeline: EvaluationPipeline,
    req: Request,
    res: ServerResponse,
    input: EvaluationInput,
    route: string,
    cors: readonly string[],
    startedAt: number,
  ): void {
    try {
      const selection = pipeline.selection('enabled', input);
      const prepared = pipeline.prepare(selection, pipeline.baseContext(input, req));
      const reply = pipeline.answer(req, prepared);
      if (reply.notModified) {
        writeReply(res, reply, pipeline.vary, cors);
        options.requestMetrics.record('POST', route, 304, startedAt);
        return;
      }
      res.once('close', () => options.requestMetrics.record('POST', route, res.statusCode, startedAt));
      passOn(options.bodyResponse, req, res, 'post lane');
      writeReply(res, reply, pipeline.vary, cors);
    } catch (err) {
      options.onError(err, req, asExpress(app, req, res), () => undefined);
    }
  }
}
