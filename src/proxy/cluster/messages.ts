/** Messages between the cluster primary and its workers over the IPC channel. */

/** Worker → primary: a scrape arrived; answer with the metrics of every worker, aggregated. */
export interface ScrapeRequest {
  type: 'flags-proxy:scrape';
  id: number;
}

/** Primary → worker: the aggregated exposition (or why there is none). */
export interface ScrapeAnswer {
  type: 'flags-proxy:scraped';
  id: number;
  text?: string;
  error?: string;
}

/** Primary → every worker: send your registry as JSON. */
export interface CollectRequest {
  type: 'flags-proxy:collect';
  id: string;
}

/** Worker → primary: one worker's registry, as `Registry.getMetricsAsJSON()` gives it. */
export interface CollectAnswer {
  type: 'flags-proxy:collected';
  id: string;
  metrics: object[];
}

/** Primary → worker: shut down as on SIGTERM (finish requests, flush usage) and exit. */
export interface ShutdownRequest {
  type: 'flags-proxy:shutdown';
}

export type ClusterMessage = ScrapeRequest | ScrapeAnswer | CollectRequest | CollectAnswer | ShutdownRequest;

const TYPES = new Set<string>([
  'flags-proxy:scrape',
  'flags-proxy:scraped',
  'flags-proxy:collect',
  'flags-proxy:collected',
  'flags-proxy:shutdown',
]);

export function isClusterMessage(value: unknown): value is ClusterMessage {
  return typeof value === 'object' && value !== null && TYPES.has(String((value as { type?: unknown }).type));
}

/** Set in the environment of the workers the primary forks. */
export const WORKER_ENV = 'FLAGS_PROXY_CLUSTER_WORKER';

/** Response header of `/proxy/health` naming the cluster worker (its number, never its pid) that answered. */
export const WORKER_HEADER = 'x-flags-proxy-worker';
