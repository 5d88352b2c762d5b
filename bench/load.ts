/**
 * The load generator, run in its own process (forked by run.ts) so it never shares a CPU queue with
 * the server under test. It receives one job on IPC, runs autocannon and answers with a summary.
 */
import autocannon from 'autocannon';

export interface LoadJob {
  url: string;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  connections: number;
  /** Seconds; ignored when `amount` is set. */
  duration: number;
  amount?: number;
  /** A new userId and sessionId per request, appended to `path` (GET). */
  uniqueContexts: boolean;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  /** CPU time (user + system, µs) the load generator itself used during the run. */
  cpuMicros: number;
}

export function runLoad(job: LoadJob): Promise<LoadResult> {
  let counter = 0;
  const base = `${process.pid.toString(36)}-${Date.now().toString(36)}`;
  const request = {
    method: job.method,
    path: job.path,
    headers: job.headers,
    body: job.body,
    ...(job.uniqueContexts
      ? {
          setupRequest: (req: { path?: string }) => {
            counter += 1;
            return { ...req, path: `${job.path}&userId=u-${base}-${counter}&sessionId=s-${base}-${counter}` };
          },
        }
      : {}),
  };
  const cpuBefore = process.cpuUsage();
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: job.url,
        connections: job.connections,
        pipelining: 1,
        timeout: 20,
        ...(job.amount ? { amount: job.amount } : { duration: job.duration }),
        requests: [request],
      },
      (err, result) => {
        if (err) {
          reject(err);
          return;
        }
        const cpu = process.cpuUsage(cpuBefore);
        resolve({
          cpuMicros: cpu.user + cpu.system,
          rps: result.requests.average,
          p50: result.latency.p50,
          p99: result.latency.p99,
          requests: result.requests.total,
          errors: result.errors,
          timeouts: result.timeouts,
          non2xx: result.non2xx,
        });
      },
    );
  });
}

if (require.main === module) {
  process.once('message', (job: LoadJob) => {
    runLoad(job).then(
      (result) => process.send?.({ ok: true, result }, () => process.exit(0)),
      (err: unknown) => process.send?.({ ok: false, error: String(err) }, () => process.exit(1)),
    );
  });
}
