import type { IncomingMessage } from 'node:http';
import express from 'express';
import typeis from 'type-is';
import { ContentTypeError, ValidationError } from '../errors/http-errors';
import type { NodeMiddleware } from './node-middleware';

const EMPTY = 'Request body is empty; send a JSON object';
const emptyBodies = new WeakSet<IncomingMessage>();

/**
 * Requires `Content-Type: application/json` (415 otherwise) and parses the body with a size limit
 * (413 above it); an empty body is a 400 saying so. Mount it after authentication, so a request
 * without a valid key is never parsed. Node's request API only: the front runs it too.
 */
export function jsonBody(limit: number): NodeMiddleware[] {
  const requireJson: NodeMiddleware = (req, _res, next) => {
    if (!typeis(req, ['application/json'])) {
      const got = req.headers['content-type'];
      // a request without a body is never of a type, whatever its header says
      if (got !== undefined && !typeis.hasBody(req) && mediaType(got) === 'application/json') {
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
      if (buf.length === 0 || decodesToNothing(req, buf)) emptyBodies.add(req);
    },
  }) as unknown as NodeMiddleware; // connect-style: Node's request API only
  const refuseEmpty: NodeMiddleware = (req, _res, next) => {
    next(emptyBodies.has(req) ? new ValidationError(EMPTY) : undefined);
  };
  return [requireJson, parse, refuseEmpty];
}

/**
 * True for a UTF-16 body whose bytes hold no text at all (one byte, or white space): the Express
 * parser drops an incomplete last code unit and would take it for an empty object rather than an
 * empty body.
 */
function decodesToNothing(req: IncomingMessage, buf: Buffer): boolean {
  const charset = /;\s*charset="?([^";\s]+)"?/i.exec(req.headers['content-type'] ?? '')?.[1]?.toLowerCase();
  if (charset === undefined || !/^(utf-?16(le|be)?|ucs-?2)$/.test(charset)) return false;
  const whole = buf.subarray(0, buf.length - (buf.length % 2));
  const text = charset.endsWith('be')
    ? Buffer.from(whole).swap16().toString('utf16le')
    : whole.toString('utf16le');
  return text.replace(/^\ufeff/, '').trim() === '';
}

function mediaType(contentType: string): string {
  return contentType.split(';')[0].trim().toLowerCase();
}
