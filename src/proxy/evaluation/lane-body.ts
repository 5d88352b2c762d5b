import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Express, Request, RequestHandler, Response } from 'express';

/**
 * What the lanes that read a request body (`post-lane.ts`, `ofrep/bulk-lane.ts`) share: which bodies
 * they read by themselves, how they read them so that one can still be handed to Express, and how
 * they run the app's middleware and error handler around their answer.
 */

/** The content types a lane reads by itself: the routes' JSON parser (`json-body.ts`) reads them the same way. */
const PLAIN_JSON = /^application\/json(?:;[ \t]*charset="?utf-8"?)?$/i;

/**
 * The `Content-Length` of a body the routes' parser would read as the lane does: plain JSON
 * (`application/json`, UTF-8), no content or transfer coding, not empty and within `maxBodySize`.
 * Undefined for every other body: Express answers it (415, 413, a chunked body, an empty one...).
 */
export function plainJsonLength(headers: IncomingHttpHeaders, maxBodySize: number): number | undefined {
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

/** What a body lane needs to know to tell whether it may take a request. */
export interface BodyLaneGate {
  features: { isReady(): boolean };
  cors: { headersFor(origin: string | undefined): readonly string[] | undefined };
  maxBodySize: number;
}

/**
 * The checks every body lane makes before it takes a request to its path: not mounted in another
 * app (route labels and paths are Express's then), ready, a plain JSON body (`plainJsonLength`) and
 * CORS that passes synchronously. The body's length and the CORS headers to set, or undefined when
 * Express is to take the request untouched.
 */
export function bodyLaneEntry(
  raw: IncomingMessage,
  gate: BodyLaneGate,
): { length: number; cors: readonly string[] } | undefined {
  if ((raw as { baseUrl?: string }).baseUrl) return undefined;
  if (!gate.features.isReady()) return undefined;
  const length = plainJsonLength(raw.headers, gate.maxBodySize);
  if (length === undefined) return undefined;
  const cors = gate.cors.headersFor(raw.headers.origin);
  if (!cors) return undefined;
  return { length, cors };
}

/**
 * Reads a body of `length` bytes in paused mode ('readable'), then calls `onBody`. A body put back
 * afterwards (`raw.unshift(body)`) flows to Express's parser as if never read (an explicit
 * `pause()` would keep the stream paused for it).
 */
export function readBody(raw: IncomingMessage, length: number, onBody: (body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  let received = 0;
  const onReadable = () => {
    let chunk: Buffer | null;
    while ((chunk = raw.read() as Buffer | null) !== null) {
      chunks.push(chunk);
      received += chunk.length;
    }
    if (received < length) return;
    raw.removeListener('readable', onReadable);
    onBody(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received));
  };
  raw.on('readable', onReadable);
}

/**
 * The body as the routes' parser reads it (`express.json` with `strict`): an object or an array,
 * or undefined when the parser would refuse it (Express then gives its own answer).
 */
export function strictJson(body: Buffer): object | undefined {
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    return typeof parsed === 'object' && parsed !== null ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Runs middleware that must pass the request on synchronously (compression); throws when one does not. */
export function passOn(
  middlewares: readonly RequestHandler[],
  req: Request,
  res: ServerResponse,
  lane: string,
): void {
  for (const middleware of middlewares) {
    let passed = false;
    void middleware(req, res as Response, (err?: unknown) => {
      passed = err === undefined;
    });
    if (!passed)
      throw new Error(`${lane}: a response middleware did not pass a ${req.method} on synchronously`);
  }
}

/** Gives a raw request and response Express's prototypes, for the app's error middleware. */
export function asExpress(app: Express, req: Request, res: ServerResponse): Response {
  const response = res as Response;
  req.res = response;
  response.req = req;
  Object.setPrototypeOf(req, app.request);
  Object.setPrototypeOf(res, app.response);
  return response;
}
