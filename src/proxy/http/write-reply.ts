import type { IncomingMessage, ServerResponse } from 'node:http';
import { addVary, withVary } from '../../common/http/vary';
import type { Reply } from '../engine/evaluator';
import { sendBody } from '../compression/body-encoding';

/** Browsers and SDKs may reuse a toggle list for two seconds, then revalidate with its ETag. */
export const CACHE_CONTROL = 'public, max-age=2';

/**
 * The last step of every evaluation request: the headers of spec 4.2 and the toggle list (compressed
 * for a client that accepts it: `body-encoding.ts`), or a 304 without a body. Node's response API
 * only, so the raw path and Express routes share it. With
 * `headers` (a flat `[name, value, ...]` list, e.g. remembered CORS headers) a 304 is one `writeHead`.
 * `vary` (`KeyVary.evaluation`) names the key's header on the 200 and the 304 alike: the answer
 * depends on the key's scope, and `public` would otherwise let a shared cache hand it to any key.
 */
export function writeReply(
  req: IncomingMessage,
  res: ServerResponse,
  reply: Reply,
  vary: string,
  headers?: readonly string[],
): void {
  if (reply.notModified) {
    if (headers) {
      res.writeHead(304, [...withVary(headers, vary), 'Cache-Control', CACHE_CONTROL, 'ETag', reply.etag]);
    } else {
      addVary(res, vary);
      res.setHeader('Cache-Control', CACHE_CONTROL);
      res.setHeader('ETag', reply.etag);
      res.statusCode = 304;
    }
    res.end();
    return;
  }
  if (headers) {
    const list = withVary(headers, vary);
    for (let i = 0; i < list.length; i += 2) res.setHeader(list[i], list[i + 1]);
  } else {
    addVary(res, vary);
  }
  res.setHeader('Cache-Control', CACHE_CONTROL);
  res.setHeader('ETag', reply.etag);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  const body = typeof reply.body === 'string' ? Buffer.from(reply.body) : reply.body;
  sendBody(req, res, body, reply.release, reply.forms);
}
