import cluster from 'node:cluster';
import type { RequestListener } from 'node:http';
import type { Registry } from 'prom-client';
import { isClusterMessage, WORKER_ENV, WORKER_HEADER, type ClusterMessage } from './messages';

/** How long a scrape waits for the primary's aggregate. */
const SCRAPE_TIMEOUT_MS = 5_000;

/** True in a worker forked by our cluster primary. */
export function isClusterWorker(): boolean {
  return cluster.isWorker && process.env[WORKER_ENV] === '1';
}

function send(message: ClusterMessage): void {
  if (process.connected) process.send?.(message);
}

/**
 * Wires a worker to the primary: answers its collection requests with `registry`, returns the
 * exposition function that asks the primary for the aggregate of every worker, and calls
 * `shutdown` when the primary asks for it or goes away.
 */
export function joinCluster(registry: Registry, shutdown: () => void): () => Promise<string> {
  let nextId = 0;
  const pending = new Map<number, { resolve(text: string): void; reject(err: Error): void }>();
  process.on('message', (message: unknown) => {
    if (!isClusterMessage(message)) return;
    if (message.type === 'flags-proxy:collect') {
      registry
        .getMetricsAsJSON()
        .then((metrics) => send({ type: 'flags-proxy:collected', id: message.id, metrics }))
        .catch(() => send({ type: 'flags-proxy:collected', id: message.id, metrics: [] }));
    } else if (message.type === 'flags-proxy:scraped') {
      const waiting = pending.get(message.id);
      pending.delete(message.id);
      if (message.text !== undefined) waiting?.resolve(message.text);
      else waiting?.reject(new Error(message.error ?? 'no metrics from the cluster primary'));
    } else if (message.type === 'flags-proxy:shutdown') {
      shutdown();
    }
  });
  // The primary owns the listening socket: without it this worker gets no more connections.
  process.once('disconnect', shutdown);
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error('the cluster primary did not answer with the metrics in time'));
      }, SCRAPE_TIMEOUT_MS);
      pending.set(id, {
        resolve: (text) => {
          clearTimeout(timer);
          resolve(text);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      });
      send({ type: 'flags-proxy:scrape', id });
    });
}

/** The app as a request listener that names this worker on `/proxy/health` answers. */
export function namingWorker(app: RequestListener, healthPath: string): RequestListener {
  const id = String(cluster.worker?.id ?? 0);
  return (req, res) => {
    if (req.url === healthPath || req.url?.startsWith(`${healthPath}?`)) res.setHeader(WORKER_HEADER, id);
    app(req, res);
  };
}
