import type { Response } from 'express';
import type { ScopeServing } from '../environments/environment';
import type { ProxyMetrics } from './proxy-metrics';

/** What a scrape's key may see of the exposition; undefined: all of it. */
export type ScrapeView = (scope: ScopeServing) => ((text: string) => string) | undefined;

/**
 * The answer of `GET {prefix}/proxy/internal-backstage/prometheus` (a key's scrape) and of the
 * backstage's `metrics`: the app's registry in the text format, as much of it as the key's `view`
 * shows (its own environment's series, see `environment-filter.ts`); all of it without a view.
 */
export function scrapeAnswer(
  metrics: ProxyMetrics,
  view?: ScrapeView,
): (req: unknown, res: Response, call: { scope: ScopeServing }) => Promise<void> {
  return async (_req, res, call) => {
    const text = await metrics.scrape();
    const shown = view?.(call.scope);
    res
      .status(200)
      .type(metrics.registry.contentType)
      .send(shown ? shown(text) : text);
  };
}
