import type { IncomingMessage, ServerResponse } from 'node:http';
import zlib from 'node:zlib';
import Negotiator from 'negotiator';
import type { BodyForms } from '../engine/body-forms';

/** Bodies shorter than this are sent as they are (the `compression` middleware's threshold here). */
export const COMPRESSION_THRESHOLD = 1024;

export type BodyEncoding = 'br' | 'gzip' | 'deflate';

// As the `compression` middleware negotiates (1.8): Brotli first when the client ranks it equal.
const SUPPORTED = ['br', 'gzip', 'deflate', 'identity'];
const PREFERRED = ['br', 'gzip'];
/**
 * Compression settings for answers made per request (docs/performance.md measures them): Brotli at
 * quality 1 and zlib at level 1 instead of the `compression` middleware's defaults (Brotli 4, zlib
 * 6). The bench's browser row, interleaved: quality 4 → 2 took 287–318 → 195–222 µs per request at
 * 200 flags and 1,021–1,235 → 743–1,006 at 2,000; 2 → 1 took 426–430 → 276–379 and 2,107–3,054 →
 * 1,238–2,713 on a slower host. A 148 KB answer is 6.4 KB at quality 1 (6.5 at 2, 5.1 at 4), a
 * 15 KB one 1,064 B (956 at 2, 792 at 4): one packet either way. In process
 * (`bench/compression-cost.ts`, a new user's 13 / 131 KB answer), µs per KB and ratio: Brotli 0
 * 3.2 / 11.6 × and 1.3 / 15.8 ×, Brotli 1 2.6 / 13.7 × and 1.6 / 22.1 ×, Brotli 2 6.0 / 14.9 × and
 * 4.0 / 21.6 ×, gzip 1 4.4 / 14.1 × and 2.4 / 20.8 ×: quality 1 is the cheapest per byte saved at
 * both sizes. About 10 µs of each call is the encoder's set-up, which Node's one-call API does not
 * let a later call reuse.
 */
const BROTLI_QUALITY = 1;
const ZLIB_LEVEL = 1;

/**
 * The encoding an answer with a body is sent in, chosen as the `compression` middleware chooses:
 * none for `HEAD`, for a request without `Accept-Encoding`, or when the client accepts only
 * `identity`; else the client's preferred of Brotli, gzip and deflate (Brotli, then gzip, on a tie).
 */
export function negotiatedEncoding(req: IncomingMessage): BodyEncoding | undefined {
  if (req.method === 'HEAD' || !req.headers['accept-encoding']) return undefined;
  const chosen = new Negotiator(req).encoding(SUPPORTED, PREFERRED);
  return chosen === 'br' || chosen === 'gzip' || chosen === 'deflate' ? chosen : undefined;
}

/** `body` compressed in one call, with the settings above. */
export function compressBody(body: Uint8Array, encoding: BodyEncoding): Buffer {
  switch (encoding) {
    case 'br':
      return zlib.brotliCompressSync(body, {
        params: {
          [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
          [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length,
        },
      });
    case 'gzip':
      return zlib.gzipSync(body, { level: ZLIB_LEVEL });
    case 'deflate':
      return zlib.deflateSync(body, { level: ZLIB_LEVEL });
  }
}

/**
 * Sends an evaluation answer's JSON body (a toggle list, OFREP's flags) with status 200, after the
 * caller set its other headers (`Vary: Accept-Encoding` among them): compressed in one synchronous
 * call when it is at least `COMPRESSION_THRESHOLD` bytes and the client accepts an encoding
 * (`Content-Encoding` set), as it is otherwise; `Content-Length` of what is sent. `release` gives
 * the body's memory back once nothing reads it: at once when compressed, else when written out
 * (never on an abort).
 *
 * Why not the `compression` middleware, which the other answers go through: it streams every body
 * through zlib on the thread pool, and for these answers that cost 8–14 × the whole uncompressed
 * request (a 15 KB answer: ~990 µs of CPU with a browser's `Accept-Encoding` against ~70 µs
 * without; one call compresses it in ~70–140 µs). See docs/performance.md.
 */
export function sendBody(
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
  release: (() => void) | undefined,
  /** A kept body's compressed forms: read, or made once and kept (`engine/body-forms.ts`). */
  forms?: BodyForms,
  /**
   * The other headers as a flat `[name, value, ...]` list the caller made for this response (it is
   * added to): then the status and every header go in one `writeHead`.
   */
  head?: string[],
): void {
  const sent = encoded(req, res, body, forms, head);
  if (head === undefined) {
    res.setHeader('Content-Length', sent.length);
    res.statusCode = 200;
  } else {
    head.push('Content-Length', String(sent.length));
    res.writeHead(200, head);
  }
  if (release) {
    if (sent !== body) release();
    else res.once('finish', release);
  }
  res.end(sent);
}

/** The bytes to send for `body`: its compressed form for a client that accepts one, else itself. */
function encoded(
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
  forms: BodyForms | undefined,
  head: string[] | undefined,
): Buffer {
  if (body.length < COMPRESSION_THRESHOLD) return body;
  const encoding = negotiatedEncoding(req);
  if (encoding === undefined) return body;
  if (head === undefined) res.setHeader('Content-Encoding', encoding);
  else head.push('Content-Encoding', encoding);
  const kept = forms?.get(encoding);
  if (kept !== undefined) return kept;
  const compressed = compressBody(body, encoding);
  forms?.keep(encoding, compressed);
  return compressed;
}
