import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { AuthenticationRequired, HttpError, NoAccessError, NotReady } from '../../common/errors/http-errors';
import { keyFromHeader, secretMatcher } from '../auth/client-key';
import type { ScopeServing } from '../environments/environment';
import type { KeyScopes } from '../environments/key-scopes';
import {
  environmentRefused,
  resolveRequestKey,
  type RequireScopeOptions,
} from '../environments/require-scope';
import { clientGone, retryAfter, ValidationUnavailable } from '../token-validation/validation-unavailable';
import type { Call, KeyPolicy } from './endpoint';

/** A key whose environment cannot be served now: 503 with `Retry-After`; else the serving. */
function servedNow(call: Call, serving: ScopeServing): ScopeServing | HttpError {
  const refused = environmentRefused(serving);
  if (refused === undefined) return serving;
  call.res.setHeader('Retry-After', '1');
  return refused;
}

/**
 * The key step of the evaluation endpoints: a frontend key in the configured header (plain or
 * `Bearer`). 401 without one or for a refused one, 503 when it could not be validated now or its
 * environment cannot be served. A configured key, or one the upstream already validated, is
 * answered without waiting (a keep-alive connection repeating its key is not hashed again).
 */
export function frontendKey(keys: KeyScopes, options: RequireScopeOptions): KeyPolicy {
  const header = options.attempts[0].header;
  return {
    now(call) {
      const key = keyFromHeader(call.req.headers[header]);
      if (key === undefined) return options.missing;
      const known = keys.knownOn(call.req.socket, key, 'frontend');
      if (known === null) return options.invalid;
      if (known === undefined) return undefined;
      call.key = key;
      return servedNow(call, known);
    },
    async later(call) {
      const serving = await resolveRequestKey(options, call.req.headers, () => clientGone(call.res));
      if (serving instanceof ValidationUnavailable) return retryAfter(call.res, serving);
      if (serving instanceof HttpError) return serving;
      call.key = keyFromHeader(call.req.headers[header]) ?? '';
      return servedNow(call, serving);
    },
  };
}

export interface OfrepKeyOptions {
  keys: KeyScopes;
  /** The configured client key header. */
  header: string;
  /** Server-side SDK tokens: valid credentials, but not for evaluation (403). */
  serverTokens: readonly string[];
}

/**
 * OFREP's key step: the first accepted key of the configured header (plain or `Bearer`),
 * `Authorization: Bearer` and `X-API-Key`. 401 without a key or when none is accepted, 403 for a
 * server-side SDK token, 503 when a key could not be validated now or its environment cannot be
 * served (after the other keys were tried). A key of the configured header that is known now is
 * answered without waiting. The same resolution opens OFREP's change stream (`resolveOfrepKey`).
 */
export function ofrepKey(options: OfrepKeyOptions): KeyPolicy {
  const { keys, header } = options;
  return {
    now(call) {
      const key = keyFromHeader(call.req.headers[header]);
      if (!key) return undefined;
      const known = keys.knownOn(call.req.socket, key, 'frontend');
      if (!known || !known.environment.isServing()) return undefined;
      call.key = key;
      return known;
    },
    async later(call) {
      const found = await resolveOfrepKey(options, call.req, call.res);
      if (found instanceof HttpError) return found;
      call.key = found.key;
      return found.serving;
    },
  };
}

/**
 * OFREP's key → scope step, written once: the first of `candidates` (by default the request's, in
 * `ofrepCandidates`' order) that the key step accepts and whose environment is served, with what
 * serves it; else the error to answer (see `ofrepKey`).
 */
export async function resolveOfrepKey(
  options: OfrepKeyOptions,
  req: IncomingMessage,
  res: ServerResponse,
  candidates: readonly string[] = ofrepCandidates(req.headers, options.header),
): Promise<{ readonly key: string; readonly serving: ScopeServing } | HttpError> {
  let notReady: NotReady | undefined;
  for (const key of candidates) {
    const serving = await options.keys.resolve(key, 'frontend', () => clientGone(res));
    if (serving instanceof ValidationUnavailable) {
      notReady ??= retryAfter(res, serving);
      continue;
    }
    if (serving === undefined) continue;
    const refused = environmentRefused(serving);
    if (refused) {
      notReady ??= refused;
      continue;
    }
    return { key, serving };
  }
  if (notReady) {
    if (!res.hasHeader('Retry-After')) res.setHeader('Retry-After', '1');
    return notReady;
  }
  if (candidates.length === 0) return new AuthenticationRequired('Missing client key');
  if (options.serverTokens.length > 0 && candidates.some((k) => secretMatcher(options.serverTokens)(k)))
    return new NoAccessError('Server-side SDK tokens cannot evaluate flags; use a client key');
  return new AuthenticationRequired('Invalid client key');
}

/** The candidate keys of an OFREP request: the configured header, `Authorization`, `X-API-Key`. */
export function ofrepCandidates(headers: IncomingHttpHeaders, header: string): string[] {
  const found = [
    keyFromHeader(headers[header]),
    keyFromHeader(headers.authorization),
    keyFromHeader(headers['x-api-key']),
  ];
  return [...new Set(found.filter((k): k is string => k !== undefined && k !== ''))];
}

/** The key step's options of the evaluation endpoints (`frontend`), the client API (`client`) and client usage (`usage`). */
export function keyStepOptions(
  keys: KeyScopes,
  header: string,
  serverTokens: readonly string[],
): { frontend: RequireScopeOptions; client: RequireScopeOptions; usage: RequireScopeOptions } {
  const missing = new AuthenticationRequired(`Missing client key: send it in the "${header}" header`);
  return {
    frontend: {
      keys,
      attempts: [{ header, kind: 'frontend' }],
      missing,
      invalid: new AuthenticationRequired(`Invalid client key in the "${header}" header`),
    },
    client: {
      keys,
      attempts: [{ header: 'authorization', kind: 'client' }],
      missing: new AuthenticationRequired('Missing client token: send it in the "authorization" header'),
      invalid: new AuthenticationRequired('Invalid client token in the "authorization" header'),
    },
    // frontend SDKs send their key, server-side SDKs their token
    usage: {
      keys,
      attempts: [
        { header, kind: 'frontend' },
        { header: 'authorization', kind: 'client' },
      ],
      missing,
      invalid: new AuthenticationRequired(
        `Invalid client key in the "${header}" header` +
          (serverTokens.length > 0 ? ' (and no valid server-side SDK token in "authorization")' : ''),
      ),
    },
  };
}
