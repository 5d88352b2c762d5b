import type { RequestHandler } from 'express';
import { NoAccessError } from '../../common/errors/http-errors';
import { hasAccessLists, isAllowed, type AccessLists } from './address-list';

/**
 * ALLOW_LIST / DENY_LIST as the first step of every request: the client address as Express's
 * `trust proxy` resolves it (`req.ip`), refused with 403 before CORS, readiness, keys or bodies.
 * Undefined when no list is configured (nothing to mount).
 */
export function accessMiddleware(lists: AccessLists): RequestHandler | undefined {
  if (!hasAccessLists(lists)) return undefined;
  const refused = new NoAccessError('Requests from this address are not accepted (ALLOW_LIST / DENY_LIST)');
  return (req, _res, next) => {
    next(isAllowed(lists, req.ip) ? undefined : refused);
  };
}
