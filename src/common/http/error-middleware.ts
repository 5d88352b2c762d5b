import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import {
  ContentTypeError,
  ErrorBody,
  HttpError,
  InternalError,
  NotFoundError,
  PayloadTooLarge,
  ValidationError,
} from '../errors/http-errors';
import type { Logger } from '../logging/logger';

/**
 * Writes the standard error body with Node's response API: used by the error middleware, and by
 * the raw evaluation path for refusals that must cost less than an answer (a wrong client key).
 * `headers` (a flat `[name, value, ...]` list) are written with it in one `writeHead`.
 */
export function sendError(res: ServerResponse, error: HttpError, headers?: readonly string[]): ErrorBody {
  const body: ErrorBody = { id: randomUUID(), name: error.kind, message: error.message };
  const text = JSON.stringify(body);
  const own = [
    'Content-Type',
    'application/json; charset=utf-8',
    'Content-Length',
    String(Buffer.byteLength(text)),
  ];
  if (headers) {
    res.writeHead(error.status, [...headers, ...own]);
  } else {
    for (let i = 0; i < own.length; i += 2) res.setHeader(own[i], own[i + 1]);
    res.statusCode = error.status;
  }
  res.end(text);
  return body;
}

interface BodyParserError {
  type: string;
  limit?: number;
  message: string;
}

function isBodyParserError(err: unknown): err is BodyParserError {
  return typeof err === 'object' && err !== null && typeof (err as { type?: unknown }).type === 'string';
}

/** Turns errors of Express's body parser into errors of our family. */
function fromBodyParser(err: BodyParserError): HttpError | undefined {
  switch (err.type) {
    case 'entity.too.large':
      return new PayloadTooLarge(`Request body is larger than the limit of ${err.limit ?? '?'} bytes`);
    case 'entity.parse.failed':
      return new ValidationError(`Request body is not valid JSON: ${err.message}`);
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ContentTypeError(`Unsupported request body encoding: ${err.message}`);
    case 'request.aborted':
    case 'request.size.invalid':
      return new ValidationError('Request body was incomplete');
    default:
      return undefined;
  }
}

/** The one error middleware of an app; mount it last. */
export function errorMiddleware(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    let httpError: HttpError | undefined;
    if (err instanceof HttpError) httpError = err;
    else if (isBodyParserError(err)) httpError = fromBodyParser(err);
    if (httpError) {
      sendError(res, httpError);
      return;
    }
    const body = sendError(res, new InternalError('Internal error; the error id is logged with its cause'));
    logger.error('request failed', {
      errorId: body.id,
      method: req.method,
      path: req.path,
      error: err instanceof Error ? (err.stack ?? err.message) : String(err),
    });
  };
}

/** 404 for every route nobody answered. Mount just before the error middleware. */
export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(new NotFoundError(`No endpoint ${req.method} ${req.path}`));
};
