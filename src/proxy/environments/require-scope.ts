import type { RequestHandler, Response } from 'express';
import { AuthenticationRequired, NotReady } from '../../common/errors/http-errors';
import { keyFromHeader } from '../auth/client-key';
import { clientGone, retryAfter, ValidationUnavailable } from '../token-validation/validation-unavailable';
import type { ScopeServing } from './environment';
import type { KeyKind, KeyScopes } from './key-scopes';

/** The serving of the request's key, set by `requireScope`. */
export function scopeOf(res: Response): ScopeServing {
  const serving = res.locals.scope as ScopeServing | undefined;
  if (serving === undefined) throw new Error('no key scope on this request: requireScope must run first');
  return serving;
}

/** 503 for a key whose environment's upstream token is refused (the other environments keep serving). */
export function environmentRefused(serving: ScopeServing): NotReady | undefined {
  if (serving.environment.isServing()) return undefined;
  return new NotReady(
    `flags-proxy cannot serve environment "${serving.environment.name}" now: the upstream refused its token or it has not synchronised yet`,
  );
}

export interface RequireScopeOptions {
  keys: KeyScopes;
  /** Where a key is looked for and which kind it must be, tried in order until one is accepted. */
  attempts: ReadonlyArray<{ header: string; kind: KeyKind }>;
  /** The refusal without any key, and with keys that are all refused (built once). */
  missing: AuthenticationRequired;
  invalid: AuthenticationRequired;
  /** Accept a key whose environment cannot be served now (a metrics scrape reports that state). */
  whileUnserved?: boolean;
}

/**
 * The serving of the first accepted key of a request; `missing` when no header carries one; a
 * `ValidationUnavailable` when no key is accepted and one could not be validated now (503, not
 * 401). `gone` gives the signal of the client going, for a wait on the upstream.
 */
export async function resolveRequestKey(
  opts: RequireScopeOptions,
  headers: Record<string, string | string[] | undefined>,
  gone?: () => AbortSignal,
): Promise<ScopeServing | AuthenticationRequired | ValidationUnavailable> {
  let sawKey = false;
  let unavailable: ValidationUnavailable | undefined;
  for (const { header, kind } of opts.attempts) {
    const key = keyFromHeader(headers[header]);
    if (key === undefined) continue;
    sawKey = true;
    const known = opts.keys.known(key, kind);
    const serving = known === undefined ? await opts.keys.resolve(key, kind, gone) : (known ?? undefined);
    if (serving instanceof ValidationUnavailable) unavailable ??= serving;
    else if (serving !== undefined) return serving;
  }
  return unavailable ?? (sawKey ? opts.invalid : opts.missing);
}

/**
 * The key step as middleware: 401 without a key or with one that is refused; 503 when its
 * environment cannot be served (unless `whileUnserved`) or the key could not be validated now;
 * otherwise `res.locals.scope` is what serves it.
 */
export function requireScope(opts: RequireScopeOptions): RequestHandler {
  return async (req, res, next) => {
    const serving = await resolveRequestKey(opts, req.headers, () => clientGone(res));
    if (serving instanceof AuthenticationRequired) {
      next(serving);
      return;
    }
    if (serving instanceof ValidationUnavailable) {
      next(retryAfter(res, serving));
      return;
    }
    const refused = opts.whileUnserved ? undefined : environmentRefused(serving);
    if (refused) {
      res.setHeader('Retry-After', '1');
      next(refused);
      return;
    }
    res.locals.scope = serving;
    next();
  };
}
