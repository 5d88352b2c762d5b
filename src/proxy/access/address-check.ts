import type { IncomingMessage } from 'node:http';
import { hasAccessLists, isAllowed, type AccessLists } from './address-list';

/**
 * ALLOW_LIST / DENY_LIST, the gate's first step: whether a request's client address is allowed
 * (`req.ip` on Express's request, where `trust proxy` resolved it; the connection's address on
 * Node's, which the front is handed only without `trustProxy`). Undefined when no list is configured.
 */
export function addressCheck(lists: AccessLists): ((req: IncomingMessage) => boolean) | undefined {
  if (!hasAccessLists(lists)) return undefined;
  return (req) => isAllowed(lists, (req as { ip?: string }).ip ?? req.socket.remoteAddress);
}
