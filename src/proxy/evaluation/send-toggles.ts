import type { Request, Response } from 'express';
import { etagMatches, weakEtag } from '../../common/http/etag';
import type { EvaluatedToggle } from '../upstream/feature-repository';

/** Writes a toggle list with the headers of spec 4.2, answering 304 when `If-None-Match` matches. */
export function sendToggles(req: Request, res: Response, toggles: readonly EvaluatedToggle[]): void {
  const body = JSON.stringify({ toggles });
  const etag = weakEtag(body);
  res.setHeader('Cache-Control', 'public, max-age=2');
  res.setHeader('ETag', etag);
  if (etagMatches(req.headers['if-none-match'], etag)) {
    res.status(304).end();
    return;
  }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.status(200).end(body);
}
