import express, { type RequestHandler } from 'express';
import { ContentTypeError } from '../errors/http-errors';

/**
 * Requires `Content-Type: application/json` (415 otherwise) and parses the body with a size limit
 * (413 above it). Mount it after authentication, so a request without a valid key is never parsed.
 */
export function jsonBody(limit: number): RequestHandler[] {
  const requireJson: RequestHandler = (req, _res, next) => {
    if (!req.is('application/json')) {
      const got = req.headers['content-type'] ?? 'none';
      next(new ContentTypeError(`Content-Type must be application/json (got ${got})`));
      return;
    }
    next();
  };
  return [requireJson, express.json({ limit, strict: true })];
}
