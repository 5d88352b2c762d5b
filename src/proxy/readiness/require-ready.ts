import type { RequestHandler } from 'express';
import { NotReady } from '../../common/errors/http-errors';
import type { FeatureRepository } from '../upstream/feature-repository';

/** 503 until the first synchronisation with the upstream (or a configured bootstrap) succeeded. */
export function requireReady(features: Pick<FeatureRepository, 'isReady'>): RequestHandler {
  return (_req, res, next) => {
    if (features.isReady()) {
      next();
      return;
    }
    res.setHeader('Retry-After', '1');
    next(
      new NotReady(
        'flags-proxy is not ready: it has not yet synchronised flag definitions with the upstream',
      ),
    );
  };
}
