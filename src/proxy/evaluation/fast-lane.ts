import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { parse as parseQuery } from 'node:querystring';
import type { Context } from 'unleash-client';
import type { ErrorRequestHandler, Express, Request, RequestHandler, Response } from 'express';
import { etagMatches } from '../../common/http/etag';
import { keyFromHeader, secretMatcher } from '../auth/client-key';
import { completeContext, contextFromQuery } from '../context/build-context';
import type { CorsHeaderMemo } from '../cors/cors-headers';
import { routeTemplate, type RequestMetrics } from '../prometheus/request-metrics';
import type { RequestSeriesEntry } from '../prometheus/request-series';
import type { FeatureRepository } from '../upstream/feature-repository';
import type { Answer, Evaluator, Selection } from './evaluator';
import { CACHE_CONTROL, sendAnswer } from './send-toggles';

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
  /** The app's request metrics; their middleware is the first of `everyResponse`. */
  requestMetrics: RequestMetrics;
  /** What the app's CORS middleware (the second of `everyResponse`) sets on a GET, per origin. */
  cors: CorsHeaderMemo;
  /** The middleware every response of the app passes, in app order (request metrics, CORS). */
  everyResponse: readonly RequestHandler[];
  /** The middleware that follows them for responses with a body (compression); a 304 skips it. */
  bodyResponse: readonly RequestHandler[];
  /** The app's error middleware, for an unexpected failure after the lane took the request. */
  onError: ErrorRequestHandler;
}

const ENABLED: Selection = { kind: 'enabled' };

/** Contexts remembered by socket address and query; cleared when full. */
const MAX_CONTEXTS = 10_000;

/**
 * What one keep-alive connection sent last: the client-key header value that passed the key
 * check, and its last query with the context built from it. A client polling over one connection
 * repeats both, so neither the key hash nor the context lookup runs again. Only a value equal to
 * one this same connection already had accepted is taken without the check.
 */
interface ConnectionMemo {
  acceptedKeyHeader?: string;
  url?: string;
  context?: Context;
}

type Handle = (req: IncomingMessage, res: ServerResponse, callback?: unknown) => void;

/**
 * `GET {prefix}/proxy` without Express's router: a request that the app would answer with a
 * toggle list (ready, valid client key, well-formed query, app not mounted in another one) is
 * answered here with the same context building, evaluator, headers and metrics as the router's;
 * every other request, including every error, goes to Express untouched. A 304 is written with one
 * `writeHead` from the remembered CORS headers; a body goes through the app's compression.
 */
export function installFastLane(app: Express, options: FastLaneOptions): void {
  if (!options.enabled) return;
  const keyMatches = secretMatcher(options.clientKeys);
  const contexts = new Map<string, Context>();
  const connections = new WeakMap<Socket, ConnectionMemo>();
  const route = routeTemplate(options.proxyPath, '/');
  // Looked up at the first 304, so the series appears when it has something to count, as prom-client's would.
  let notModifiedSeries: RequestSeriesEntry | undefined;
  const target = app as unknown as { handle: Handle };
  const handle = target.handle.bind(app);
  target.handle = (req, res, callback) => {
    if (!answer(req, res)) handle(req, res, callback);
  };

  function connectionMemo(socket: Socket): ConnectionMemo {
    let memo = connections.get(socket);
    if (!memo) {
      memo = {};
      connections.set(socket, memo);
    }
    return memo;
  }

  function authorised(raw: IncomingMessage, memo: ConnectionMemo): boolean {
    const header = raw.headers[options.clientKeysHeaderName];
    if (header !== undefined && header === memo.acceptedKeyHeader) return true;
    const key = keyFromHeader(header);
    if (key === undefined || !keyMatches(key)) return false;
    if (typeof header === 'string') memo.acceptedKeyHeader = header;
    return true;
  }

  /** The context of the query, or undefined when it is malformed (Express answers the 400). */
  function contextOf(req: Request, url: string, q: number, memo: ConnectionMemo): Context | undefined {
    // The context is a function of the socket address and the query: one object per pair, reused
    // while no custom strategy (which might change it) runs.
    const reuse = options.evaluator.onlyBuiltInStrategies();
    if (reuse && memo.url === url && memo.context) return memo.context;
    const query = q === -1 ? '' : url.slice(q + 1);
    const sharedKey = `${req.socket.remoteAddress ?? ''}\u0000${query}`;
    let context = reuse ? contexts.get(sharedKey) : undefined;
    if (!context) {
      try {
        context = completeContext(contextFromQuery(parseQuery(query)), req, options.environment);
      } catch {
        return undefined;
      }
      if (reuse) {
        if (contexts.size >= MAX_CONTEXTS) contexts.clear();
        contexts.set(sharedKey, context);
      }
    }
    if (reuse) {
      memo.url = url;
      memo.context = context;
    }
    return context;
  }

  function answer(raw: IncomingMessage, rawRes: ServerResponse): boolean {
    if (raw.method !== 'GET') return false;
    const url = raw.url ?? '';
    const q = url.indexOf('?');
    // The path, compared without cutting it out of the URL.
    if ((q === -1 ? url.length : q) !== options.proxyPath.length || !url.startsWith(options.proxyPath))
      return false;
    const req = raw as unknown as Request & { baseUrl?: string };
    const res = rawRes as unknown as Response;
    if (req.baseUrl) return false; // mounted in another app: route labels and paths are Express's
    if (!options.features.isReady()) return false;
    const startedAt = performance.now(); // a double: no BigInt per request
    const memo = connectionMemo(raw.socket);
    if (!authorised(raw, memo)) return false;
    const context = contextOf(req, url, q, memo);
    if (!context) return false;
    let result: Answer;
    try {
      result = options.evaluator.answer(ENABLED, context);
    } catch (err) {
      fail(err, req, res);
      return true;
    }
    const notModified = etagMatches(raw.headers['if-none-match'], result.etag);
    const corsHeaders = options.cors.headersFor(raw.headers.origin);
    if (notModified && corsHeaders) {
      try {
        rawRes.writeHead(304, notModifiedHeaders(corsHeaders, result.etag));
        rawRes.end();
      } catch (err) {
        fail(err, req, res);
        return true;
      }
      // Written synchronously: recorded now rather than on 'close' a tick later.
      notModifiedSeries ??= options.requestMetrics.entry('GET', route, 304);
      notModifiedSeries.observe((performance.now() - startedAt) / 1000);
      return true;
    }
    try {
      if (corsHeaders) {
        for (let i = 0; i < corsHeaders.length; i += 2) res.setHeader(corsHeaders[i], corsHeaders[i + 1]);
        res.once('close', () => options.requestMetrics.record('GET', route, res.statusCode, startedAt));
      } else {
        pass(options.everyResponse, req, res);
      }
    } catch (err) {
      fail(err, req, res);
      return true;
    }
    try {
      if (!notModified) pass(options.bodyResponse, req, res);
      // The template the router would assign, for middleware that reads it.
      req.baseUrl = options.proxyPath;
      (req as { route?: unknown }).route = { path: '/' };
      sendAnswer(req, res, result);
    } catch (err) {
      toExpress(req, res);
      options.onError(err, req, res, () => undefined);
    }
    return true;
  }

  /** The 304's header list; the last one is reused while a client keeps revalidating the same answer. */
  let last: { cors: readonly string[]; etag: string; headers: string[] } | undefined;
  function notModifiedHeaders(cors: readonly string[], etag: string): string[] {
    if (last?.cors !== cors || last.etag !== etag)
      last = { cors, etag, headers: [...cors, 'Cache-Control', CACHE_CONTROL, 'ETag', etag] };
    return last.headers;
  }

  /** An unexpected failure before any middleware ran: through them, then the app's error handler. */
  function fail(err: unknown, req: Request, res: Response): void {
    try {
      pass(options.everyResponse, req, res);
    } catch {
      /* answer the error without them */
    }
    toExpress(req, res);
    options.onError(err, req, res, () => undefined);
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
