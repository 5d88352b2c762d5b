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
  /** Requests per second over all connections (open loop); unset: as fast as answers come. */
  rate?: number;
  /**
   * A new user per request: a userId and sessionId appended to `path` (GET), or, with a `body`,
   * every `UNIQUE` placeholder in it replaced by a new value (POST).
   */
  uniqueContexts: boolean;
  /**
   * A fleet of this many users (appended to `path` as `userId`), visited in turn, each revalidating
   * the ETag of its own last answer. A first pass (not measured) visits every user once to learn them.
   */
  fleetUsers?: number;
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

/** In a unique-context POST body, replaced by a new value on every request. */
export const UNIQUE = '{{unique}}';

/** Each user's last ETag, kept across the learning pass and the measured run. */
const fleetEtags = new Map<number, string>();

function fleetRequest(job: LoadJob, users: number) {
  let next = 0;
  return {
    method: job.method,
    path: job.path,
    headers: job.headers,
    setupRequest: (
      req: { path?: string; headers?: Record<string, string> },
      context: Record<string, unknown>,
    ) => {
      const user = next;
      next = (next + 1) % users;
      context.user = user;
      const etag = fleetEtags.get(user);
      const headers = { ...job.headers, ...(etag ? { 'if-none-match': etag } : {}) };
      return { ...req, headers, path: `${job.path}&userId=fleet-user-${user}` };
    },
    onResponse: (
      _status: number,
      _body: string,
      context: Record<string, unknown>,
      headers: Record<string, string>,
    ) => {
      // autocannon passes raw header names (`ETag` as the proxy writes it)
      const etag = headers.etag ?? headers.ETag;
      if (etag && typeof context.user === 'number') fleetEtags.set(context.user, etag);
    },
  };
}

export async function runLoad(job: LoadJob): Promise<LoadResult> {
  if (job.fleetUsers) {
    // the learning pass: every user fetches its answer once
    await runAutocannon({ ...job, amount: job.fleetUsers }, fleetRequest(job, job.fleetUsers));
    await new Promise<void>((resolve) => {
      if (process.send) process.send({ measuring: true }, () => resolve());
      else resolve();
    });
  }
  return runAutocannon(job, job.fleetUsers ? fleetRequest(job, job.fleetUsers) : plainRequest(job));
}

function plainRequest(job: LoadJob) {
  let counter = 0;
  const base = `${process.pid.toString(36)}-${Date.now().toString(36)}`;
  return {
    method: job.method,
    path: job.path,
    headers: job.headers,
    body: job.body,
    ...(job.uniqueContexts && job.body !== undefined
      ? {
          setupRequest: (req: { body?: string }) => {
            counter += 1;
            return { ...req, body: (job.body ?? '').replaceAll(UNIQUE, `${base}-${counter}`) };
          },
        }
      : job.uniqueContexts
        ? {
            setupRequest: (req: { path?: string }) => {
              counter += 1;
              return {
                ...req,
                path: `${job.path}&userId=u-${base}-${counter}&sessionId=s-${base}-${counter}`,
              };
            },
          }
        : {}),
  };
}

type AutocannonRequest = NonNullable<Parameters<typeof autocannon>[0]['requests']>[number];

function runAutocannon(job: LoadJob, request: AutocannonRequest): Promise<LoadResult> {
  const cpuBefore = process.cpuUsage();
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: job.url,
        connections: job.connections,
        pipelining: 1,
        timeout: 20,
        ...(job.amount ? { amount: job.amount } : { duration: job.duration }),
        ...(job.rate ? { overallRate: job.rate } : {}),
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
