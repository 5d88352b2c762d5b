import { Router, type RequestHandler, type Response } from 'express';
import type { ProxyMetrics } from './proxy-metrics';

/** What a scrape's key may see of the exposition; undefined: all of it. */
export type ScrapeView = (res: Response) => ((text: string) => string) | undefined;

/**
 * `GET /internal-backstage/prometheus` under `{prefix}/proxy`: the app's registry in the text format,
 * as much of it as the key's `view` shows (its own environment's series, see `environment-filter.ts`).
 * `auth` runs first when given (the key step).
 */
export function prometheusRouter(metrics: ProxyMetrics, view?: ScrapeView, auth?: RequestHandler): Router {
  const router = Router();
  const steps: RequestHandler[] = auth ? [auth] : [];
  router.get('/internal-backstage/prometheus', ...steps, async (_req, res) => {
    const text = await metrics.scrape();
    const shown = view?.(res);
    res
      .status(200)
      .type(metrics.registry.contentType)
      .send(shown ? shown(text) : text);
  });
  return router;
}
