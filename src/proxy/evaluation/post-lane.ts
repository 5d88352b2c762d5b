import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Express, Request, Response } from 'express';
import { sendError } from '../../common/http/error-middleware';
import { routeTemplate, UNMATCHED_ROUTE } from '../prometheus/request-metrics';
import type { EvaluationInput, EvaluationPipeline } from './pipeline';
import type { FastLaneOptions } from './fast-lane';
import { writeReply } from './write-reply';

export interface PostLaneOptions extends FastLaneOptions {
  /** Largest body the Express route parses (`maxBodySize`); a larger one goes to Express for its 413. */
  maxBodySize: number;
}

/** What the app's compression middleware adds to every response it sees; a refusal skips it. */
const VARY = ['Vary', 'Accept-Encoding'] as const;

/** The content types the lane reads by itself: the route's JSON parser reads them the same way. */
const PLAIN_JSON = /^application\/json(?:;[ \t]*charset="?utf-8"?)?$/i;

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
    const req = raw as Request & { baseUrl?: string };
    if (req.baseUrl) return false; // mounted in another app: route labels and paths are Express's
    if (!options.features.isReady()) return false;
    const { headers } = raw;
    const length = Number(headers['content-length']);
    if (
      !PLAIN_JSON.test(headers['content-type'] ?? '') ||
      headers['content-encoding'] !== undefined ||
      headers['transfer-encoding'] !== undefined ||
      !(length > 0 && length <= options.maxBodySize)
    )
      return false;
    const cors = options.cors.headersFor(headers.origin);
    if (!cors) return false;
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
    // Read in paused mode ('readable'): a body put back afterwards flows to Express's parser as
    // if never read (an explicit pause() would keep the stream paused for it).
    const chunks: Buffer[] = [];
    let received = 0;
    const onReadable = () => {
      let chunk: Buffer | null;
      while ((chunk = raw.read() as Buffer | null) !== null) {
        chunks.push(chunk);
        received += chunk.length;
      }
      if (received < length) return;
      raw.removeListener('readable', onReadable);
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received);
      const input = inputOf(resolved.pipeline, body);
      if (input === undefined) {
        // Express reads the same bytes and gives its own answer
        raw.unshift(body);
        toExpressRoute();
        return;
      }
      respond(resolved.pipeline, req, res, input, route, cors, startedAt);
    };
    raw.on('readable', onReadable);
    return true;
  }

  /** The pipeline's input from a body, or undefined when the route would refuse it (Express answers). */
  function inputOf(pipeline: EvaluationPipeline, body: Buffer): EvaluationInput | undefined {
    try {
      const parsed: unknown = JSON.parse(body.toString('utf8'));
      // the route's parser is strict: only an object or an array is JSON to it
      if (typeof parsed !== 'object' || parsed === null) return undefined;
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
        writeReply(res, reply, cors);
        options.requestMetrics.record('POST', route, 304, startedAt);
        return;
      }
      res.once('close', () => options.requestMetrics.record('POST', route, res.statusCode, startedAt));
      for (const middleware of options.bodyResponse) {
        let passed = false;
        void middleware(req, res as Response, (err?: unknown) => {
          passed = err === undefined;
        });
        if (!passed) throw new Error('post lane: a response middleware did not pass a POST on synchronously');
      }
      writeReply(res, reply, cors);
    } catch (err) {
      req.res = res as Response;
      (res as Response).req = req;
      Object.setPrototypeOf(req, app.request);
      Object.setPrototypeOf(res, app.response);
      options.onError(err, req, res as Response, () => undefined);
    }
  }
}
