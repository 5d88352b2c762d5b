/**
 * Token validation under a keyless flood: autocannon (a separate process) sends BENCH_RATE
 * requests/s (default 1,500) over BENCH_CONNECTIONS (default 1,000) for BENCH_SECONDS (default 20)
 * to a proxy (another process), each with a distinct token-shaped junk key of 512 characters, while
 * this process asks with a fresh valid frontend token every 200 ms. The upstream (here) answers
 * `/edge/validate` as Unleash 8.2 does (413 for a body over 100 KB), or never with BENCH_HANG=1.
 * Prints how long the valid tokens waited (max, p99; and inside the proxy, from its histogram),
 * their statuses, what the upstream received, the proxy's heap (after a full GC) before and after
 * and its event-loop delay. `npm run build && node dist/bench/token-flood.js` (loopback only).
 */
import { fork, spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createApp } from '../src';

const RATE = Number(process.env.BENCH_RATE ?? 1500);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
/** autocannon's connections: each waits for its answer, so the rate needs rate × latency of them. */
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 1000);
const UPSTREAM_TOKEN = '*:development.bench-upstream-secret';
const UNLEASH_BODY_LIMIT = 100 * 1024;
/** BENCH_HANG=1: `/edge/validate` never answers (the heap and the waiters must stay bounded). */
const HANG = process.env.BENCH_HANG === '1';

/** Listens on loopback; a backlog for 1,000 connections opened at once (Node's default is 511). */
function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', 2048, () => resolve((server.address() as AddressInfo).port)),
  );
}

type Ask = { heap: true } | { stop: true };
interface Heap {
  heapMb: number;
  peakMb: number;
  /** The proxy's event-loop delay since the last question: what waiting owed to a busy CPU. */
  loopDelayMaxMs: number;
  loopDelayP99Ms: number;
}
type Tell = { port: number } | Heap;

/** The proxy's process: serves, samples its heap, answers heap questions after a full GC. */
async function proxyProcess(): Promise<void> {
  const app = createApp(
    {
      flagsUrl: process.env.BENCH_UPSTREAM_URL,
      flagsApiToken: UPSTREAM_TOKEN,
      clientKeys: ['bench-key'],
      refreshInterval: 60_000,
      metricsInterval: 60_000,
      logLevel: 'error',
    },
    {},
  );
  await app.whenReady();
  const server = http.createServer(app);
  const port = await listen(server);
  let peak = 0;
  setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 100).unref();
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const send = (m: Tell): void => void process.send?.(m);
  process.on('message', (m: Ask) => {
    if ('stop' in m) process.exit(0);
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    gc?.();
    send({
      heapMb: process.memoryUsage().heapUsed / 2 ** 20,
      peakMb: peak / 2 ** 20,
      loopDelayMaxMs: loop.max / 1e6,
      loopDelayP99Ms: loop.percentile(99) / 1e6,
    });
    peak = 0;
    loop.reset();
  });
  send({ port });
}

async function main(): Promise<void> {
  const valid = new Set<string>();
  const upstreamSeen = { calls: 0, tooLarge: 0, maxBytes: 0, maxTokens: 0 };
  const upstream = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/edge/validate') {
        const raw = Buffer.concat(chunks);
        upstreamSeen.calls += 1;
        if (HANG) return; // a hung upstream: the proxy's calls time out
        upstreamSeen.maxBytes = Math.max(upstreamSeen.maxBytes, raw.length);
        if (raw.length > UNLEASH_BODY_LIMIT) {
          upstreamSeen.tooLarge += 1;
          res.writeHead(413).end();
          return;
        }
        const { tokens } = JSON.parse(raw.toString('utf8')) as { tokens: string[] };
        upstreamSeen.maxTokens = Math.max(upstreamSeen.maxTokens, tokens.length);
        const confirmed = tokens
          .filter((t) => valid.has(t))
          .map((token) => ({ token, type: 'frontend', environment: 'development', projects: ['*'] }));
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ tokens: confirmed }));
        return;
      }
      if (req.url?.startsWith('/api/client/features')) {
        const features = [
          { name: 'f', enabled: true, project: 'default', strategies: [{ name: 'default' }] },
        ];
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ version: 2, features }));
        return;
      }
      res.writeHead(202).end();
    });
  });
  const upstreamPort = await listen(upstream);
  const child = fork(__filename, ['proxy'], {
    execArgv: ['--expose-gc'],
    env: { ...process.env, BENCH_UPSTREAM_URL: `http://127.0.0.1:${upstreamPort}/api` },
  });
  const next = (): Promise<Tell> => new Promise((resolve) => child.once('message', resolve));
  const started = (await next()) as { port: number };
  const url = `http://127.0.0.1:${started.port}/proxy`;
  const heap = async (): Promise<Heap> => {
    child.send({ heap: true });
    return (await next()) as Heap;
  };
  const before = await heap();
  /** The proxy's own time for answered 200s at /proxy (from its histogram): cumulative count per bound. */
  const served = async (): Promise<Map<string, number>> => {
    const text = await (
      await fetch(`http://127.0.0.1:${started.port}/proxy/internal-backstage/prometheus`, {
        headers: { Authorization: 'bench-key' },
      })
    ).text();
    const buckets = new Map<string, number>();
    for (const line of text.split('\n')) {
      if (!line.startsWith('flags_proxy_http_request_duration_seconds_bucket{')) continue;
      if (
        !line.includes('route="/proxy"') ||
        !line.includes('status="200"') ||
        !line.includes('method="GET"')
      )
        continue;
      const le = /le="([^"]+)"/.exec(line)?.[1] ?? '';
      buckets.set(le, Number(line.slice(line.lastIndexOf(' ') + 1)));
    }
    return buckets;
  };
  // the probes' connections, opened before the flood (they are kept alive by the probes)
  await Promise.all(
    Array.from({ length: 20 }, () =>
      fetch(url, { headers: { Authorization: 'bench-key' } }).then((r) => r.arrayBuffer()),
    ),
  );
  const servedBefore = await served();

  // `*:development.` (14) + the id (33) + the pad: 512 characters, the longest token asked about
  const pad = 'x'.repeat(465);
  const cannon = spawn(
    process.execPath,
    [
      require.resolve('autocannon/autocannon.js'),
      ...['-c', String(CONNECTIONS), '-R', String(RATE), '-d', String(SECONDS), '-I', '-j'],
      ...['-H', `Authorization=*:development.[<id>]${pad}`],
      url,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let report = '';
  cannon.stdout.on('data', (c: Buffer) => (report += c.toString()));
  const cannonDone = new Promise<void>((resolve) => cannon.on('exit', () => resolve()));

  // fresh valid tokens, one every 200 ms, during the flood
  await new Promise((r) => setTimeout(r, 1000));
  const waits: number[] = [];
  const statuses = new Map<number, number>();
  const probes: Array<Promise<void>> = [];
  for (let i = 0; i < (SECONDS - 2) * 5; i++) {
    const token = `*:development.bench-valid-${i}-${Date.now()}`;
    valid.add(token);
    probes.push(
      (async () => {
        const t0 = performance.now();
        let status = 0; // 0: the connection failed
        try {
          const res = await fetch(url, { headers: { Authorization: token } });
          await res.arrayBuffer();
          status = res.status;
        } catch {
          /* counted as status 0 */
        }
        waits.push(performance.now() - t0);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      })(),
    );
    await new Promise((r) => setTimeout(r, 200));
  }
  await Promise.all(probes);
  await cannonDone;
  const servedAfter = await served();
  const inProxy: Record<string, number> = {};
  for (const [le, count] of servedAfter) inProxy[`le ${le} s`] = count - (servedBefore.get(le) ?? 0);
  const during = await heap();
  await new Promise((r) => setTimeout(r, 5000));
  const after = await heap();
  child.send({ stop: true });
  upstream.close();

  const flood = JSON.parse(report) as {
    requests: { average: number; total: number };
    non2xx: number;
    statusCodeStats?: Record<string, { count: number }>;
    errors: number;
  };
  waits.sort((a, b) => a - b);
  const p = (q: number): number => waits[Math.min(waits.length - 1, Math.floor(q * waits.length))];
  const ms = (n: number): string => `${n.toFixed(0)} ms`;
  console.log(
    JSON.stringify(
      {
        flood: {
          rate: RATE,
          connections: CONNECTIONS,
          seconds: SECONDS,
          sent: flood.requests.total,
          averagePerSecond: flood.requests.average,
          statuses: Object.fromEntries(
            Object.entries(flood.statusCodeStats ?? {}).map(([code, s]) => [code, s.count]),
          ),
          errors: flood.errors,
        },
        freshValidTokens: {
          asked: waits.length,
          statuses: Object.fromEntries(statuses),
          median: ms(p(0.5)),
          p99: ms(p(0.99)),
          max: ms(waits[waits.length - 1]),
        },
        freshValidTokensInProxyCumulative: inProxy,
        upstream: upstreamSeen,
        proxyHeapMb: {
          beforeAfterGc: before.heapMb.toFixed(1),
          peakDuringFlood: during.peakMb.toFixed(1),
          rightAfterAfterGc: during.heapMb.toFixed(1),
          fiveSecondsLaterAfterGc: after.heapMb.toFixed(1),
        },
        proxyEventLoopDelayDuringFlood: {
          p99: ms(during.loopDelayP99Ms),
          max: ms(during.loopDelayMaxMs),
        },
      },
      null,
      2,
    ),
  );
}

if (process.argv[2] === 'proxy') void proxyProcess();
else void main();
