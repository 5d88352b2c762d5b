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
 * quality 2 and zlib at level 1 instead of the `compression` middleware's defaults (Brotli 4, zlib
 * 6). The bench's browser row, interleaved: 287–318 → 195–222 µs per request at 200 flags,
 * 1,021–1,235 → 743–1,006 at 2,000; the answers stay 4–7 % of the JSON (148 KB as 6.5 KB instead
 * of 5.1 KB, 15 KB as 956 B instead of 792 B).
 */
const BROTLI_QUALITY = 2;
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
 * The bytes to send of an evaluation answer's JSON body (a toggle list, OFREP's flags): compressed
 * in one synchronous call when it is at least `COMPRESSION_THRESHOLD` bytes and the client accepts
 * an encoding (`Content-Encoding` is set then), the body itself otherwise. The caller sets
 * `Content-Length` from what this returns, and `Vary: Accept-Encoding` on every answer.
 *
 * Why not the `compression` middleware, which the other answers go through: it streams every body
 * through zlib on the thread pool, and for these answers that cost 8–14 × the whole uncompressed
 * request (a 15 KB answer: ~990 µs of CPU with a browser's `Accept-Encoding` against ~70 µs
 * without; one call compresses it in ~70–140 µs). See docs/performance.md.
 */
export function encodeBody(
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
  /** A kept body's compressed forms: read, or made once and kept (`engine/body-forms.ts`). */
  forms?: BodyForms,
): Buffer {
  if (body.length < COMPRESSION_THRESHOLD) return body;
  const encoding = negotiatedEncoding(req);
  if (encoding === undefined) return body;
  res.setHeader('Content-Encoding', encoding);
  const kept = forms?.get(encoding);
  if (kept !== undefined) return kept;
  const compressed = compressBody(body, encoding);
  forms?.keep(encoding, compressed);
  return compressed;
}
