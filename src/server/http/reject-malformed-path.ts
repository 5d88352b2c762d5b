import type { RequestHandler } from 'express';
import { ValidationError } from '../../common/errors/http-errors';

/**
 * A path whose percent-escapes do not decode (`/api/client/features/%ZZ`) is a client's mistake: 400
 * on every path, also where no route matches (which would otherwise be a 404) or before a route's
 * parameters are decoded.
 */
export const rejectMalformedPath: RequestHandler = (req, _res, next) => {
  try {
    decodeURIComponent(req.path);
  } catch {
    throw new ValidationError('Malformed percent-encoding in the request path');
  }
  next();
};
