import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import type { Context } from 'unleash-client';
import type { ErrorRequestHandler, Express, Request, RequestHandler, Response } from 'express';
import { etagMatches } from '../../common/http/etag';
import { keyFromHeader, secretMatcher } from '../auth/client-key';
import { completeContext, contextFromQuery } from '../context/build-context';
import type { FeatureRepository } from '../upstream/feature-repository';
import type { Evaluator } from './evaluator';
import { sendAnswer } from './send-toggles';

export interface FastLaneOptions {
  /** `{prefix}/proxy`. */
  proxyPath: string;
  evaluator: Evaluator;
  features: FeatureRepository;
  environment: string | undefined;
  clientKeysHeaderName: string;
  clientKeys: readonly string[];
  /**
   * False when the context needs more than the query and the socket address (context enrichers,
   * `trustProxy`): every request then goes through Express.
   */
  enabled: boolean;
  /** The middleware every response of the app passes, in app order (request metrics, CORS). */
  everyResponse: readonly RequestHandler[];
  /** The middleware that follows them for responses with a body (compression); a 304 skips it. */
  bodyResponse: readonly RequestHandler[];
  /** The app's error middleware, for an unexpected failure after the lane took the request. */
  onError: ErrorRequestHandler;
}

/** Contexts remembered by socket address and query; cleared when full. */
const MAX_CONTEXTS = 10_000;

type Handle = (req: IncomingMessage, res: ServerResponse, callback?: unknown) => void;

/**
 * `GET {prefix}/proxy` without Express's router: a request that the app would answer with a
 * toggle list (ready, valid client key, well-formed query, app not mounted in another one) is
 * answered here through the same middleware, context building, evaluator and response writer as
 * the router's; every other request, including every error, goes to Express untouched.
 */
export function installFastLane(app: Express, options: FastLaneOptions): void {
  if (!options.enabled) return;
  const keyMatches = secretMatcher(options.clientKeys);
  const contexts = new Map<string, Context>();
  const target = app as unknown as { handle: Handle };
  const handle = target.handle.bind(app);
  target.handle = (req, res, callback) => {
    if (!answer(req, res)) handle(req, res, callback);
  };

  function answer(raw: IncomingMessage, rawRes: ServerResponse): boolean {
    if (raw.method !== 'GET') return false;
    const url = raw.url ?? '';
    const q = url.indexOf('?');
    if ((q === -1 ? url : url.slice(0, q)) !== options.proxyPath) return false;
    const req = raw as unknown as Request & { baseUrl?: string };
    const res = rawRes as unknown as Response;
    if (req.baseUrl) return false; // mounted in another app: route labels and paths are Express's
    if (!options.features.isReady()) return false;
    const key = keyFromHeader(raw.headers[options.clientKeysHeaderName]);
    if (key === undefined || !keyMatches(key)) return false;
    // The context is a function of the socket address and the query: one object per pair, reused
    // while no custom strategy (which might change it) runs.
    const reuse = options.evaluator.onlyBuiltInStrategies();
    const contextKey = `${raw.socket.remoteAddress ?? ''}\u0000${q === -1 ? '' : url.slice(q + 1)}`;
    let context = reuse ? contexts.get(contextKey) : undefined;
    if (!context) {
      try {
        context = completeContext(
          contextFromQuery(parseQuery(q === -1 ? '' : url.slice(q + 1))),
          req,
          options.environment,
        );
      } catch {
        return false; // Express answers the 400
      }
      if (reuse) {
        if (contexts.size >= MAX_CONTEXTS) contexts.clear();
        contexts.set(contextKey, context);
      }
    }
    let passedMiddleware = false;
    const pass = (middlewares: readonly RequestHandler[]) => {
      for (const middleware of middlewares) {
        let passed = false;
        void middleware(req, res, (err?: unknown) => {
          passed = err === undefined;
        });
        if (!passed) throw new Error('fast lane: a response middleware did not pass a GET on synchronously');
      }
    };
    try {
      const answer = options.evaluator.answer({ kind: 'enabled' }, context);
      pass(options.everyResponse);
      passedMiddleware = true;
      // A 304 has no body, so compression would do nothing for it but wrap the response.
      if (!etagMatches(raw.headers['if-none-match'], answer.etag)) pass(options.bodyResponse);
      // The template the request metrics label this route with, as the router would assign it.
      req.baseUrl = options.proxyPath;
      (req as { route?: unknown }).route = { path: '/' };
      sendAnswer(req, res, answer);
    } catch (err) {
      if (!passedMiddleware) {
        try {
          pass(options.everyResponse);
        } catch {
          /* answer the error without them */
        }
      }
      req.res = res;
      res.req = req;
      Object.setPrototypeOf(req, app.request);
      Object.setPrototypeOf(res, app.response);
      options.onError(err, req, res, () => undefined);
    }
    return true;
  }
}
