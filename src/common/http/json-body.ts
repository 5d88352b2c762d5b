import type { IncomingMessage } from 'node:http';
import express, { type RequestHandler } from 'express';
import { ContentTypeError, ValidationError } from '../errors/http-errors';

const EMPTY = 'Request body is empty; send a JSON object';
const emptyBodies = new WeakSet<IncomingMessage>();

/**
 * Requires `Content-Type: application/json` (415 otherwise) and parses the body with a size limit
 * (413 above it); an empty body is a 400 saying so. Mount it after authentication, so a request
 * without a valid key is never parsed.
 */
export function jsonBody(limit: number): RequestHandler[] {
  const requireJson: RequestHandler = (req, _res, next) => {
    if (!req.is('application/json')) {
      const got = req.headers['content-type'];
      // `req.is` answers null for a request without a body, whatever its type says
      if (got !== undefined && !hasBody(req) && mediaType(got) === 'application/json') {
        next(new ValidationError(EMPTY));
        return;
      }
      next(new ContentTypeError(`Content-Type must be application/json (got ${got ?? 'none'})`));
      return;
    }
    next();
  };
  const parse = express.json({
    limit,
    strict: true,
    verify: (req, _res, buf) => {
      if (buf.length === 0) emptyBodies.add(req);
    },
  });
  const refuseEmpty: RequestHandler = (req, _res, next) => {
    next(emptyBodies.has(req) ? new ValidationError(EMPTY) : undefined);
  };
  return [requireJson, parse, refuseEmpty];
}

/** As Node's parser frames it: a body comes with `Transfer-Encoding` or a `Content-Length`. */
function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || req.headers['content-length'] !== undefined;
}

function mediaType(contentType: string): string {
  return contentType.split(';')[0].trim().toLowerCase();
}
