import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { jsonBody } from '../../common/http/json-body';
import { runMiddleware, type NodeMiddleware } from '../../common/http/node-middleware';

/** The content types read here directly: the JSON parser (`json-body.ts`) reads them the same way. */
const PLAIN_JSON = /^application\/json(?:;[ \t]*charset="?utf-8"?)?$/i;

/**
 * The body step of the front: a request's JSON body, read once, within the size limit, in the
 * encoding and type `json-body.ts` accepts (415, 413, 400 otherwise). A plain body (`application/
 * json` in UTF-8, no content or transfer coding, a `Content-Length` within the limit) is read and
 * parsed here; any other body, or a plain one that does not parse to an object or array, goes to
 * the JSON parser (the bytes already read put back in front of the stream), which gives the
 * answer it always gave.
 */
export class RequestBody {
  private readonly parser: readonly NodeMiddleware[];

  constructor(private readonly maxBodySize: number) {
    this.parser = jsonBody(maxBodySize);
  }

  read(req: IncomingMessage, res: ServerResponse, done: (err: unknown, body?: unknown) => void): void {
    const length = plainJsonLength(req.headers, this.maxBodySize);
    if (length === undefined) {
      this.parse(req, res, done);
      return;
    }
    readBytes(req, length, (bytes) => {
      const parsed = strictJson(bytes);
      if (parsed !== undefined) {
        done(undefined, parsed);
        return;
      }
      req.unshift(bytes);
      this.parse(req, res, done);
    });
  }

  private parse(
    req: IncomingMessage,
    res: ServerResponse,
    done: (err: unknown, body?: unknown) => void,
  ): void {
    runMiddleware(this.parser, req, res, (err) => done(err, (req as { body?: unknown }).body));
  }
}

/** The `Content-Length` of a plain JSON body within `maxBodySize`; undefined for any other body. */
function plainJsonLength(headers: IncomingHttpHeaders, maxBodySize: number): number | undefined {
  const length = Number(headers['content-length']);
  if (
    !PLAIN_JSON.test(headers['content-type'] ?? '') ||
    headers['content-encoding'] !== undefined ||
    headers['transfer-encoding'] !== undefined ||
    !(length > 0 && length <= maxBodySize)
  )
    return undefined;
  return length;
}

/**
 * Reads `length` bytes in paused mode ('readable'); bytes put back afterwards (`req.unshift`) flow
 * to the JSON parser as if never read.
 */
function readBytes(req: IncomingMessage, length: number, onBytes: (bytes: Buffer) => void): void {
  const chunks: Buffer[] = [];
  let received = 0;
  const onReadable = (): void => {
    let chunk: Buffer | null;
    while ((chunk = req.read() as Buffer | null) !== null) {
      chunks.push(chunk);
      received += chunk.length;
    }
    if (received < length) return;
    req.removeListener('readable', onReadable);
    onBytes(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received));
  };
  req.on('readable', onReadable);
}

/** The body as the strict JSON parser reads it: an object or an array, else undefined. */
function strictJson(bytes: Buffer): object | undefined {
  try {
    const parsed: unknown = JSON.parse(bytes.toString('utf8'));
    return typeof parsed === 'object' && parsed !== null ? parsed : undefined;
  } catch {
    return undefined;
  }
}
