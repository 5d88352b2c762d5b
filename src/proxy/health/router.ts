import { Router } from 'express';
import type { FeatureRepository } from '../upstream/feature-repository';
import { requireReady } from '../readiness/require-ready';

/** `GET /proxy/health`: no client key; 503 until the first synchronisation, then `ok`. */
export function healthRouter(features: Pick<FeatureRepository, 'isReady'>): Router {
  const router = Router();
  router.get('/health', requireReady(features), (_req, res) => {
    res.status(200).type('text/html; charset=utf-8').send('ok');
  });
  return router;
}
