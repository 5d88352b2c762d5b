import type { Response } from 'express';

/**
 * `GET /proxy/health`'s answer: `ok` once the proxy is ready (the gate answers 503 before). No
 * client key.
 */
export function healthAnswer(_req: unknown, res: Response): void {
  res.status(200).type('text/html; charset=utf-8').send('ok');
}
