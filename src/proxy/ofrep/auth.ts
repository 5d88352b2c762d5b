import { hash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { AuthenticationRequired, NoAccessError, NotReady } from '../../common/errors/http-errors';
import { keyFromHeader, secretMatcher } from '../auth/client-key';

export interface OfrepAuthOptions {
  clientKeysHeaderName: string;
  clientKeys: readonly string[];
  /** Server-side SDK tokens: valid credentials, but not for evaluation (403). */
  serverTokens: readonly string[];
  /**
   * The scope of a key (kept in `res.locals.scope`), undefined when refused; may ask the upstream
   * (and throw a `NotReady` when it cannot, after the request's other keys were tried). Without it,
   * only the configured client keys are accepted.
   */
  resolveKey?: (key: string, res: Response) => Promise<object | undefined>;
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

/** The candidate keys of a request: the configured header (also as `Bearer`), `Authorization: Bearer`, `X-API-Key`. */
function candidates(req: Request, headerName: string): string[] {
  const found = [
    keyFromHeader(req.headers[headerName]),
    keyFromHeader(req.headers.authorization),
    keyFromHeader(req.headers['x-api-key']),
  ];
  return [...new Set(found.filter((k): k is string => k !== undefined && k !== ''))];
}

/** Finds the accepted client key of a request; 401 without one, 403 for a server-side SDK token. */
export function ofrepKeyCheck(opts: OfrepAuthOptions): (req: Request) => string {
  const isClientKey = secretMatcher(opts.clientKeys);
  const isServerToken = secretMatcher(opts.serverTokens);
  return (req) => {
    const keys = candidates(req, opts.clientKeysHeaderName);
    const key = keys.find((k) => isClientKey(k));
    if (key !== undefined) return key;
    if (keys.length === 0) throw new AuthenticationRequired('Missing client key');
    if (opts.serverTokens.length > 0 && keys.some((k) => isServerToken(k))) {
      throw new NoAccessError('Server-side SDK tokens cannot evaluate flags; use a client key');
    }
    throw new AuthenticationRequired('Invalid client key');
  };
}

/** Middleware form of `ofrepKeyCheck`; the accepted key is kept in `res.locals.clientKey`. */
export function requireOfrepKey(opts: OfrepAuthOptions): RequestHandler {
  const resolveKey = opts.resolveKey;
  if (resolveKey) {
    const isServerToken = secretMatcher(opts.serverTokens);
    return async (req, res, next) => {
      const keys = candidates(req, opts.clientKeysHeaderName);
      let notReady: NotReady | undefined;
      for (const key of keys) {
        let scope: object | undefined;
        try {
          scope = await resolveKey(key, res);
        } catch (err) {
          if (!(err instanceof NotReady)) throw err;
          notReady ??= err;
          continue;
        }
        if (scope !== undefined) {
          res.locals.clientKey = key;
          res.locals.scope = scope;
          next();
          return;
        }
      }
      if (notReady) throw notReady;
      if (keys.length === 0) throw new AuthenticationRequired('Missing client key');
      if (opts.serverTokens.length > 0 && keys.some((k) => isServerToken(k)))
        throw new NoAccessError('Server-side SDK tokens cannot evaluate flags; use a client key');
      throw new AuthenticationRequired('Invalid client key');
    };
  }
  const check = ofrepKeyCheck(opts);
  return (req, res, next) => {
    res.locals.clientKey = check(req);
    next();
  };
}

/**
 * The stream accepts a client key in a header (non-browser clients) or the stream token of one in
 * the `token` query parameter (browsers).
 */
export function requireStreamAccess(opts: OfrepAuthOptions, streamKeys?: StreamKeys): RequestHandler {
  const resolveKey = opts.resolveKey;
  if (resolveKey) {
    const configured = new Map(opts.clientKeys.map((key) => [streamToken(key), key]));
    const requireKey = requireOfrepKey(opts);
    return async (req, res, next) => {
      const token = req.query.token;
      if (typeof token === 'string' && token !== '') {
        const key = configured.get(token) ?? streamKeys?.keyOf(token);
        const scope = key === undefined ? undefined : await resolveKey(key, res);
        if (scope === undefined) throw new AuthenticationRequired('Invalid stream token');
        res.locals.clientKey = key;
        res.locals.scope = scope;
        next();
        return;
      }
      await requireKey(req, res, next);
    };
  }
  const check = ofrepKeyCheck(opts);
  const isToken = secretMatcher(opts.clientKeys.map(streamToken));
  return (req, _res, next) => {
    const token = req.query.token;
    if (typeof token === 'string' && token !== '') {
      if (!isToken(token)) throw new AuthenticationRequired('Invalid stream token');
      next();
      return;
    }
    check(req);
    next();
  };
}
