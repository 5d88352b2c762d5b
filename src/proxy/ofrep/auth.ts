import { hash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler, Response } from 'express';
import { AuthenticationRequired, HttpError } from '../../common/errors/http-errors';

/**
 * How OFREP's routes beside its two endpoints find who calls: the key step of the evaluation
 * endpoints (`http/key-policies.ts`, `resolveOfrepKey`), handed in by the app, so that a key is
 * resolved in one place whatever route it reaches.
 */
export interface OfrepAccess {
  /** The configured client keys (their stream tokens need no entry in `StreamKeys`). */
  readonly clientKeys: readonly string[];
  /**
   * The first accepted key of `candidates` (the request's own when not given) and what serves it;
   * else the error to answer (401, 403, 503).
   */
  resolve(
    req: IncomingMessage,
    res: ServerResponse,
    candidates?: readonly string[],
  ): Promise<{ readonly key: string; readonly serving: object } | HttpError>;
}

/** Most stream tokens of resolved (not configured) keys remembered, to open their streams. */
const MAX_STREAM_KEYS = 10_000;

/** The keys behind stream tokens handed out in bulk answers (configured keys need no entry). */
export class StreamKeys {
  private readonly keys = new Map<string, string>();

  remember(key: string): string {
    const token = streamToken(key);
    if (!this.keys.has(token)) {
      this.keys.set(token, key);
      if (this.keys.size > MAX_STREAM_KEYS) this.keys.delete(this.keys.keys().next().value as string);
    }
    return token;
  }

  keyOf(token: string): string | undefined {
    return this.keys.get(token);
  }
}

/**
 * The stream token of a client key: what the stream URL carries instead of the key, because a
 * browser's `EventSource` cannot send headers. A one-way digest: it opens change streams only, never
 * evaluates, and does not reveal the key; the same key gives the same token on every replica.
 */
export function streamToken(clientKey: string): string {
  return hash('sha256', `flags-proxy ofrep change stream\u0000${clientKey}`, 'base64url');
}

/** Express middleware of the key step: the accepted key and its scope kept in `res.locals`. */
export function requireOfrepKey(access: OfrepAccess): RequestHandler {
  return async (req: Request, res: Response, next) => {
    const found = await access.resolve(req, res);
    if (found instanceof HttpError) throw found;
    res.locals.clientKey = found.key;
    res.locals.scope = found.serving;
    next();
  };
}

/**
 * The stream accepts a client key in a header (non-browser clients) or the stream token of one in
 * the `token` query parameter (browsers): the key behind the token goes through the same key step.
 */
export function requireStreamAccess(access: OfrepAccess, streamKeys: StreamKeys): RequestHandler {
  const configured = new Map(access.clientKeys.map((key) => [streamToken(key), key]));
  const requireKey = requireOfrepKey(access);
  return async (req: Request, res: Response, next) => {
    const token = req.query.token;
    if (typeof token !== 'string' || token === '') return requireKey(req, res, next);
    const key = configured.get(token) ?? streamKeys.keyOf(token);
    const found = key === undefined ? undefined : await access.resolve(req, res, [key]);
    if (found instanceof AuthenticationRequired || found === undefined)
      throw new AuthenticationRequired('Invalid stream token');
    if (found instanceof HttpError) throw found;
    res.locals.clientKey = found.key;
    res.locals.scope = found.serving;
    next();
  };
}
