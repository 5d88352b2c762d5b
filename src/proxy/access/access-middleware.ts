import type { IncomingMessage } from 'node:http';
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

/**
 * The same check for the front's gate: whether a request's client address is allowed (`req.ip` on
 * Express's request, where `trust proxy` resolved it; the connection's address on Node's, which the
 * front is handed only without `trustProxy`). Undefined when no list is configured.
 */
export function addressCheck(lists: AccessLists): ((req: IncomingMessage) => boolean) | undefined {
  if (!hasAccessLists(lists)) return undefined;
  return (req) => isAllowed(lists, (req as { ip?: string }).ip ?? req.socket.remoteAddress);
}
