import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import type { HttpError } from '../../common/errors/http-errors';
import type { ScopeServing } from '../environments/environment';

/**
 * One request in flight through the front: what the gate found (the CORS headers to write, the
 * key's scope, the body) and what the endpoint needs of the request. Made by the front, filled by
 * the gate in its order, read by the endpoint.
 */
export interface Call {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** The path without the query string, as the app sees it (a mount path removed). */
  readonly path: string;
  /** The query string without `?` ('' when none). */
  readonly query: string;
  /** Where the app is mounted in a host Express app ('' when it is not). */
  readonly mountPath: string;
  /** The route the request matched, as the endpoint declared it (`/proxy/all`). */
  readonly template: string;
  /** The route's path parameters, percent-decoded (after the key step). */
  params: Readonly<Record<string, string>>;
  /** The CORS headers every answer carries, as a flat `[name, value, ...]` list. */
  cors: readonly string[];
  /** The accepted key (after the key step). */
  key: string;
  /** What serves the key (after the key step). */
  scope: ScopeServing;
  /** The parsed JSON body of a POST (after the body step). */
  body: unknown;
  /**
   * Runs the response middleware of answers with a body (the `compression` middleware): call it
   * before writing one. The evaluation answers (`write-reply.ts`, OFREP's bulk answer) compress
   * their own bodies instead (`body-encoding.ts`) and do not call it.
   */
  bodyFollows(): void;
}

/**
 * Who may call an endpoint: the key step. `now` answers without waiting when it can (a configured
 * key, a key the upstream already validated): the scope, a refusal, or undefined when only `later`
 * can tell (the upstream must be asked). Both set `call.key`.
 */
export interface KeyPolicy {
  now(call: Call): ScopeServing | HttpError | undefined;
  later(call: Call): Promise<ScopeServing | HttpError>;
}

/** Writes an error in an endpoint's own shape; false to leave it to the standard shape. */
export type ErrorShape = (err: unknown, call: Call) => boolean;

/**
 * One kind of request: its methods and paths, who may call it, whether it reads a JSON body, how
 * it answers and in which error shape. The front runs the gate in front of `serve`: a new
 * endpoint is this declaration and its `serve`, never a step of its own.
 */
export interface Endpoint {
  /**
   * `[method, path]` pairs, paths as the app serves them (base path included; `:name` for a
   * parameter; a trailing `/*` for the path and everything below it, the method `*` for every method).
   */
  readonly routes: ReadonlyArray<readonly ['GET' | 'POST' | '*', string]>;
  /** 503 until the proxy holds definitions (before the key step). */
  readonly needsReady: boolean;
  /** The key step; none for an endpoint anyone may call. */
  readonly key?: KeyPolicy;
  /** A POST's body is JSON, read by the gate's body step (within `bodyLimit`, else the app's limit). */
  readonly jsonBody: boolean;
  readonly bodyLimit?: number;
  /** Errors in the endpoint's shape (OFREP's); the standard shape otherwise. */
  readonly errors?: ErrorShape;
  /**
   * The evaluation answers write their own CORS headers (`call.cors`) and compress their own
   * bodies; for every other endpoint the gate sets the CORS headers on the response and runs the
   * response middleware (compression) before `serve`.
   */
  readonly ownHeaders?: boolean;
  /**
   * `serve` reads Express's request and response (`res.json`, `req.query`): the front's listener
   * hands such a request to the Express app, whose first middleware is the same front.
   */
  readonly express?: boolean;
  /** What no other route took (a prefix's 404): its series label is `unmatched`, not its path. */
  readonly fallback?: boolean;
  /** Answers the request; a rejected promise or a throw is answered in the endpoint's error shape. */
  serve(call: Call): void | Promise<void>;
}

/** The rules of a declared route: everything of an `Endpoint` but its routes and its `serve`. */
export type RouteRules = Partial<Omit<Endpoint, 'routes' | 'serve' | 'express'>>;

/** An Express handler behind the gate: `call` holds what the gate found (the key's scope, the body). */
export type ExpressServe = (req: Request, res: Response, call: Call) => void | Promise<void>;

/**
 * Declares the cold routes of one room (health, backstage, the client API …): each `get`/`post` is an endpoint with the room's rules, changed per route where given, served by an Express
 * handler. `endpoints` is what the front is built with.
 */
export class Routes {
  readonly endpoints: Endpoint[] = [];

  constructor(private readonly rules: RouteRules = {}) {}

  get(paths: string | readonly string[], serve: ExpressServe, rules: RouteRules = {}): this {
    return this.add('GET', paths, serve, rules);
  }

  post(paths: string | readonly string[], serve: ExpressServe, rules: RouteRules = {}): this {
    return this.add('POST', paths, serve, rules);
  }

  private add(
    method: 'GET' | 'POST' | '*',
    paths: string | readonly string[],
    serve: ExpressServe,
    rules: RouteRules,
  ): this {
    const all = typeof paths === 'string' ? [paths] : paths;
    this.endpoints.push({
      needsReady: false,
      jsonBody: false,
      ...this.rules,
      ...rules,
      routes: all.map((p) => [method, p] as const),
      express: true,
      serve: (call) => serve(call.req as Request, call.res as Response, call),
    });
    return this;
  }
}
