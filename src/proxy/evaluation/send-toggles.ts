import type { Request, Response } from 'express';
import { etagMatches } from '../../common/http/etag';
import type { Answer } from './evaluator';

/** Writes a toggle list with the headers of spec 4.2, answering 304 when `If-None-Match` matches. */
export function sendAnswer(req: Request, res: Response, answer: Answer): void {
  res.setHeader('Cache-Control', 'public, max-age=2');
  res.setHeader('ETag', answer.etag);
  if (etagMatches(req.headers['if-none-match'], answer.etag)) {
    res.status(304).end();
    return;
  }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader(
    'Content-Length',
    typeof answer.body === 'string' ? Buffer.byteLength(answer.body) : answer.body.length,
  );
  res.status(200).end(answer.body);
}
