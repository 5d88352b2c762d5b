import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, Counter, Gauge, Registry } from 'prom-client';
import { tell, type Logger } from '../../common/logging/logger';
import { cachedRender } from '../prometheus/cached-render';
import { isClusterMessage, WORKER_ENV, type ClusterMessage } from './messages';

/** A worker that lived at least this long counts as started: its death restarts it at once. */
const STABLE_AFTER_MS = 10_000;
const RESTART_BASE_MS = 1_000;
const RESTART_MAX_MS = 30_000;
/** How long one worker may take to answer a metrics collection before a scrape goes on without it. */
const COLLECT_TIMEOUT_MS = 2_000;
/** How long the workers may take to finish their shutdown (requests in flight, usage flush). */
const SHUTDOWN_TIMEOUT_MS = 30_000;

export interface RunningPrimary {
  kind: 'primary';
  /** Number of workers the primary keeps running. */
  readonly workers: number;
  /** Asks every worker to shut down as on SIGTERM and waits until all have exited. */
  stop(): Promise<void>;
}

export interface PrimaryOptions {
  workers: number;
  logger: Logger;
  /** Extra environment of the workers (they also inherit the primary's). */
  env: Record<string, string>;
  /** ms an aggregated exposition answers further scrapes (`prometheusCacheInterval`). */
  scrapeCacheMs: number;
  /** Called after a signal-initiated stop; exits the process by default. */
  exit?: (code: number) => void;
}

function send(worker: Worker, message: ClusterMessage): void {
  if (worker.isConnected()) worker.send(message);
}

function describeExit(code: number | null, signal: string | null): string {
  return signal ? `signal ${signal}` : `code ${code ?? '?'}`;
}

/**
 * The `node:cluster` primary: forks the workers, which share the port, replaces a worker that dies
 * (with a back-off while workers die soon after starting), forwards SIGTERM/SIGINT and waits for
 * every worker's shutdown, and aggregates the workers' Prometheus registries for a scrape.
 */
export function runPrimary({
  workers,
  logger,
  env,
  scrapeCacheMs,
  exit = process.exit,
}: PrimaryOptions): RunningPrimary {
  const startedAt = new Map<number, number>();
  /** Workers that listen, and so have their shutdown handler; others are simply terminated. */
  const listening = new Set<number>();
  const restartTimers = new Set<NodeJS.Timeout>();
  let earlyDeaths = 0;
  let stopping: Promise<void> | undefined;

  const own = new Registry();
  const restarts = new Counter({
    name: 'flags_proxy_worker_restarts_total',
    help: 'Worker processes the cluster primary started to replace one that died',
    registers: [own],
  });
  const answering = new Gauge({
    name: 'flags_proxy_workers',
    help: 'Worker processes whose metrics this scrape aggregates',
    registers: [own],
  });

  const fork = () => {
    const worker = cluster.fork({ ...env, [WORKER_ENV]: '1' });
    startedAt.set(worker.id, Date.now());
    logger.info(`worker ${worker.id} started (pid ${worker.process.pid ?? '?'})`);
  };

  cluster.on('exit', (worker, code, signal) => {
    const lived = Date.now() - (startedAt.get(worker.id) ?? 0);
    startedAt.delete(worker.id);
    listening.delete(worker.id);
    if (stopping) return;
    earlyDeaths = lived < STABLE_AFTER_MS ? earlyDeaths + 1 : 0;
    const delay = earlyDeaths === 0 ? 0 : Math.min(RESTART_BASE_MS * 2 ** (earlyDeaths - 1), RESTART_MAX_MS);
    logger.error(
      `worker ${worker.id} exited (${describeExit(code, signal)}); starting a new one${delay > 0 ? ` in ${delay} ms` : ''}`,
    );
    const timer = setTimeout(() => {
      restartTimers.delete(timer);
      if (stopping) return;
      restarts.inc();
      fork();
    }, delay);
    restartTimers.add(timer);
  });

  cluster.on('listening', (worker) => listening.add(worker.id));

  // One listener for every collection (never one per scrape), and one collection shared by every
  // scrape that arrives while it runs or within `scrapeCacheMs` after it.
  let nextCollect = 0;
  const collecting = new Map<string, { answers: object[][]; left: number; finish: () => void }>();
  cluster.on('message', (_worker, message: unknown) => {
    if (!isClusterMessage(message) || message.type !== 'flags-proxy:collected') return;
    const collection = collecting.get(message.id);
    if (!collection) return;
    collection.answers.push(message.metrics);
    if (--collection.left === 0) collection.finish();
  });
  const collect = (): Promise<object[][]> => {
    const id = `c${nextCollect++}`;
    const live = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w?.isConnected() === true);
    return new Promise((resolve) => {
      const answers: object[][] = [];
      const finish = () => {
        clearTimeout(timer);
        collecting.delete(id);
        resolve(answers);
      };
      const timer = setTimeout(finish, COLLECT_TIMEOUT_MS);
      if (live.length === 0) return finish();
      collecting.set(id, { answers, left: live.length, finish });
      for (const worker of live) send(worker, { type: 'flags-proxy:collect', id });
    });
  };
  const aggregate = cachedRender(async () => {
    const answers = await collect();
    answering.set(answers.length);
    const aggregated = AggregatorRegistry.aggregate<'text/plain; version=0.0.4; charset=utf-8'>(answers);
    return Registry.merge([aggregated, own]).metrics();
  }, scrapeCacheMs);

  cluster.on('message', (worker, message: unknown) => {
    if (!isClusterMessage(message) || message.type !== 'flags-proxy:scrape') return;
    aggregate()
      .then((text) => send(worker, { type: 'flags-proxy:scraped', id: message.id, text }))
      .catch((err: unknown) => {
        const error = err instanceof Error ? err.message : String(err);
        send(worker, { type: 'flags-proxy:scraped', id: message.id, error });
      });
  });

  const stop = () => {
    stopping ??= new Promise<void>((resolve) => {
      for (const timer of restartTimers) clearTimeout(timer);
      restartTimers.clear();
      const alive = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
      let left = alive.length;
      if (left === 0) return resolve();
      const force = setTimeout(() => {
        logger.error(`workers did not finish their shutdown in ${SHUTDOWN_TIMEOUT_MS} ms; killing them`);
        for (const w of alive) if (!w.isDead()) w.process.kill('SIGKILL');
      }, SHUTDOWN_TIMEOUT_MS);
      for (const worker of alive) {
        worker.once('exit', () => {
          if (--left === 0) {
            clearTimeout(force);
            resolve();
          }
        });
        if (listening.has(worker.id) && worker.isConnected()) send(worker, { type: 'flags-proxy:shutdown' });
        else worker.process.kill('SIGTERM');
      }
    });
    return stopping;
  };

  const onSignal = (signal: NodeJS.Signals) => {
    tell(logger, `received ${signal}: stopping ${workers} workers`);
    void stop().then(() => {
      tell(logger, 'flags-proxy stopped: every worker has shut down');
      exit(0);
    });
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);

  tell(logger, `flags-proxy cluster primary (pid ${process.pid}) starting ${workers} workers`);
  for (let i = 0; i < workers; i++) fork();
  return { kind: 'primary', workers, stop };
}
