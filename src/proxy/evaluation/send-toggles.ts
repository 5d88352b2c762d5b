import type { Request, Response } from 'express';
import { etagMatches } from '../../common/http/etag';
import type { Answer } from './evaluator';

/** Browsers and SDKs may reuse a toggle list for two seconds, then revalidate with its ETag. */
export const CACHE_CONTROL = 'public, max-age=2';

/**
 * Writes a toggle list with the headers of spec 4.2, answering 304 when `If-None-Match` matches.
 * Uses only Node's response API, so the fast lane can use it on a response Express never saw.
 */
export function sendAnswer(req: Request, res: Response, answer: Answer): void {
  res.setHeader('Cache-Control', CACHE_CONTROL);
  res.setHeader('ETag', answer.etag);
  if (etagMatches(req.headers['if-none-match'], answer.etag)) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader(
    'Content-Length',
    typeof answer.body === 'string' ? Buffer.byteLength(answer.body) : answer.body.length,
  );
  res.statusCode = 200;
  res.end(answer.body);
}
