import type { ServerResponse } from 'node:http';
import {
  AuthenticationRequired,
  NoAccessError,
  NotReady,
  ValidationError,
} from '../../common/errors/http-errors';
import { OfrepError } from './request-input';

/** A JSON answer with Node's response API. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', String(Buffer.byteLength(text)));
  res.end(text);
}

/** The flag key of a single-flag evaluation path under `{prefix}/ofrep`. */
function flagKeyOfPath(path: string): string | undefined {
  const match = /\/v1\/evaluate\/flags\/([^/]+)$/.exec(path);
  if (!match) return undefined;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return match[1];
  }
}

/**
 * OFREP's own answers to a failure: 401/403 without a body, 400 in its error shape (`PARSE_ERROR`,
 * `INVALID_CONTEXT`, with the flag's `key` on a single evaluation). False for anything else, which
 * is answered in the standard shape (a `NotReady` gets its `Retry-After` here).
 */
export function ofrepErrorAnswer(err: unknown, path: string, res: ServerResponse): boolean {
  // a key whose environment is not served (its token refused, or not synchronised yet)
  if (err instanceof NotReady && !res.hasHeader('Retry-After')) res.setHeader('Retry-After', '1');
  if (err instanceof AuthenticationRequired || err instanceof NoAccessError) {
    res.statusCode = err.status;
    res.end();
    return true;
  }
  if (err instanceof OfrepError) {
    sendJson(res, err.status, err.body);
    return true;
  }
  if (err instanceof ValidationError) {
    const key = flagKeyOfPath(path);
    sendJson(res, 400, {
      ...(key === undefined ? {} : { key }),
      errorCode: 'PARSE_ERROR',
      errorDetails: err.message,
    });
    return true;
  }
  if (err instanceof URIError) {
    sendJson(res, 400, {
      errorCode: 'PARSE_ERROR',
      errorDetails: 'The flag key in the path is not valid percent-encoding (a "%" must start "%XX")',
    });
    return true;
  }
  if ((err as { type?: unknown } | null)?.type === 'entity.parse.failed') {
    const key = flagKeyOfPath(path);
    sendJson(res, 400, {
      ...(key === undefined ? {} : { key }),
      errorCode: 'PARSE_ERROR',
      errorDetails: `Request body is not valid JSON: ${(err as Error).message}`,
    });
    return true;
  }
  return false;
}
