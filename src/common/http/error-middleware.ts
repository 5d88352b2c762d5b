import { randomUUID } from 'node:crypto';
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
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

/** Writes the standard error body. Used by the error middleware and nowhere else. */
function sendError(res: Response, error: HttpError): ErrorBody {
  const body: ErrorBody = { id: randomUUID(), name: error.kind, message: error.message };
  res.status(error.status).type('application/json; charset=utf-8').send(JSON.stringify(body));
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
