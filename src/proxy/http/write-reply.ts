import type { IncomingMessage, ServerResponse } from 'node:http';
import { addVary, headWith } from '../../common/http/vary';
import type { Reply } from '../engine/evaluator';
import { sendBody } from '../compression/body-encoding';

/** Browsers and SDKs may reuse a toggle list for two seconds, then revalidate with its ETag. */
export const CACHE_CONTROL = 'public, max-age=2';

/**
 * The last step of every evaluation request: the headers of spec 4.2 and the toggle list (compressed
 * for a client that accepts it: `body-encoding.ts`), or a 304 without a body. Node's response API
 * only, so the raw path and Express routes share it. With `headers` (a flat `[name, value, ...]`
 * list, e.g. remembered CORS headers) a 304 or a 200 is one `writeHead` of a prepared list, without
 * a `setHeader` per header (each checks and stores its header before the head is written).
 * `vary` (`KeyVary.evaluation`) names the key's header on the 200 and the 304 alike: the answer
 * depends on the key's scope, and `public` would otherwise let a shared cache hand it to any key.
 * When the CORS middleware wrote its headers on the response itself (the gate could not remember
 * them for this origin) and named `Vary` there, the headers are set one by one, so that `Vary` is
 * merged, not replaced.
 */
export function writeReply(
  req: IncomingMessage,
  res: ServerResponse,
  reply: Reply,
  vary: string,
  headers?: readonly string[],
): void {
  const direct = headers !== undefined && !res.hasHeader('Vary');
  if (reply.notModified) {
    if (direct) {
      const head = headWith(headers, vary, CACHE_CONTROL);
      head.push('ETag', reply.etag);
      res.writeHead(304, head);
    } else {
      addVary(res, vary);
      res.setHeader('Cache-Control', CACHE_CONTROL);
      res.setHeader('ETag', reply.etag);
      res.statusCode = 304;
    }
    res.end();
    return;
  }
  if (direct) {
    // one `writeHead` with the whole list: no header set one by one, checked and stored first
    const head = headWith(headers, vary, CACHE_CONTROL);
    head.push('ETag', reply.etag, 'Content-Type', CONTENT_TYPE);
    sendBody(req, res, toBuffer(reply.body), reply.release, reply.forms, head);
    return;
  }
  addVary(res, vary);
  res.setHeader('Cache-Control', CACHE_CONTROL);
  res.setHeader('ETag', reply.etag);
  res.setHeader('Content-Type', CONTENT_TYPE);
  sendBody(req, res, toBuffer(reply.body), reply.release, reply.forms);
}

const CONTENT_TYPE = 'application/json; charset=utf-8';

const toBuffer = (body: string | Buffer): Buffer => (typeof body === 'string' ? Buffer.from(body) : body);
