import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
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
import { RateLimitedLog } from '../logging/rate-limited-log';

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

/** The 4xx status an error of Express, its router or its body parser carries (`http-errors`' convention). */
function clientStatus(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const status =
    (err as { status?: unknown; statusCode?: unknown }).status ??
    (err as { statusCode?: unknown }).statusCode;
  return typeof status === 'number' && status >= 400 && status < 500 ? status : undefined;
}

/**
 * A request the client got wrong that Express found before our code ran: a path parameter that is
 * not valid percent-encoding (the router's `URIError`), a compressed body that does not inflate, …
 */
function fromClientMistake(err: unknown, contentEncoding: string | undefined): HttpError | undefined {
  if (err instanceof URIError)
    return new ValidationError('The request path is not valid percent-encoding (a "%" must start "%XX")');
  const status = clientStatus(err);
  if (status === undefined) return undefined;
  if (status === 413) return new PayloadTooLarge('Request body is too large');
  if (status === 415) return new ContentTypeError('Unsupported request body');
  if (contentEncoding !== undefined && contentEncoding !== 'identity')
    return new ValidationError(`Request body is not valid "${contentEncoding}" data`);
  return new ValidationError('Malformed request');
}

/** At most one error-level line per cause and minute; the others go to debug with their error id. */
const ERROR_LOG_WINDOW_MS = 60_000;

/** An error of our family for anything a request can fail with: ours, the body parser's, Express's. */
export function toHttpError(
  err: unknown,
  contentEncoding: string | string[] | undefined,
): HttpError | undefined {
  if (err instanceof HttpError) return err;
  return (
    (isBodyParserError(err) ? fromBodyParser(err) : undefined) ??
    fromClientMistake(err, headerValue(contentEncoding))
  );
}

/**
 * Writes the answer to a failed request with Node's response API: a client's mistake in the
 * standard error shape (logged at debug when it is not one of ours), anything else a 500 whose
 * cause is logged at error level with its error id (at most one line per cause and minute).
 * `headers` as `sendError` takes them. Shared by the error middleware and the front.
 */
export class ErrorAnswers {
  private readonly errors: RateLimitedLog;

  constructor(private readonly logger: Logger) {
    this.errors = new RateLimitedLog(logger, ERROR_LOG_WINDOW_MS);
  }

  answer(
    err: unknown,
    req: { method?: string; headers: IncomingHttpHeaders },
    path: string,
    res: ServerResponse,
    headers?: readonly string[],
  ): void {
    const httpError = toHttpError(err, req.headers['content-encoding']);
    if (httpError) {
      if (!(err instanceof HttpError)) this.logger.debug(`refused a malformed request: ${httpError.message}`);
      sendError(res, httpError, headers);
      return;
    }
    const body = sendError(
      res,
      new InternalError('Internal error; the error id is logged with its cause'),
      headers,
    );
    const fields = {
      errorId: body.id,
      method: req.method,
      path,
      error: err instanceof Error ? (err.stack ?? err.message) : String(err),
    };
    const cause = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    if (!this.errors.error('request failed', cause.slice(0, 200), fields)) {
      this.logger.debug('request failed (error line rate-limited)', fields);
    }
  }
}

/** The one error middleware of an app; mount it last. */
export function errorMiddleware(logger: Logger): ErrorRequestHandler {
  const answers = new ErrorAnswers(logger);
  return (err: unknown, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    answers.answer(err, req, req.path, res);
  };
}

function headerValue(value: string | string[] | undefined): string | undefined {
  const text = Array.isArray(value) ? value.join(', ') : value;
  return text?.trim().toLowerCase() || undefined;
}

/** 404 for every route nobody answered. Mount just before the error middleware. */
export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(new NotFoundError(`No endpoint ${req.method} ${req.path}`));
};
