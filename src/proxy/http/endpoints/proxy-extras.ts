import { healthAnswer } from '../../health/health-answer';
import type { ProxyMetrics } from '../../prometheus/proxy-metrics';
import { scrapeAnswer, type ScrapeView } from '../../prometheus/scrape-answer';
import { Routes, type Endpoint, type KeyPolicy } from '../endpoint';
import { notFound } from './not-found';

export interface ProxyExtrasOptions {
  /** `{prefix}/proxy`. */
  proxyPath: string;
  /** The evaluation paths (`/proxy`, `/api/frontend`, `/api/proxy` under the prefix). */
  clientPaths: readonly string[];
  metrics: ProxyMetrics;
  /** What a key's scrape shows of the exposition. */
  scrapeView: ScrapeView;
  /** The scrape's key: a frontend key, accepted also while its environment is not served. */
  scrapeKey: KeyPolicy;
  /** The evaluation endpoints' key: anything else under the evaluation paths asks for it before its 404. */
  evaluationKey: KeyPolicy;
}

/**
 * The rest of the specification's `/proxy`: `GET /proxy/health` (no key; 503 until ready, then
 * `ok`), the key's scrape `GET /proxy/internal-backstage/prometheus`, and, for any other request
 * under the evaluation paths, readiness and the key first, then 404.
 */
export function proxyExtrasEndpoints(options: ProxyExtrasOptions): Endpoint[] {
  const { proxyPath } = options;
  const routes = new Routes({ needsReady: true })
    .get(`${proxyPath}/health`, healthAnswer)
    .get(`${proxyPath}/internal-backstage/prometheus`, scrapeAnswer(options.metrics, options.scrapeView), {
      key: options.scrapeKey,
    });
  return [
    ...routes.endpoints,
    notFound(options.clientPaths, { needsReady: true, key: options.evaluationKey }),
  ];
}
