import { Router } from 'express';
import type { ProxyMetrics } from './proxy-metrics';

/** `GET /internal-backstage/prometheus` under `{prefix}/proxy`: the app's registry in the text format. */
export function prometheusRouter(metrics: ProxyMetrics): Router {
  const router = Router();
  router.get('/internal-backstage/prometheus', async (_req, res) => {
    const text = await metrics.scrape();
    res.status(200).type(metrics.registry.contentType).send(text);
  });
  return router;
}
