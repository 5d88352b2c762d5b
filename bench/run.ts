/**
 * `npm run bench`: the proxy against its ceiling.
 *
 * One process (this one) serves the generated definitions on loopback as the upstream; the proxy
 * runs as a child process (`dist/src/bin/flags-proxy.js`, configured by environment variables); the
 * ceiling is a bare `node:http` child answering the proxy's own bytes; autocannon runs in a third
 * child. Environment overrides: BENCH_DURATION (s per cell, default 3), BENCH_SIZES (default
 * 20,200,2000), BENCH_CONNECTIONS (default 32), BENCH_UNIQUE_REQUESTS (default 100000),
 * BENCH_MEMORY_FLAGS (default 10000), BENCH_SKIP_MEMORY=1, BENCH_SCENARIOS (comma-separated parts of
 * scenario names, e.g. `304,repeated`), BENCH_WORKERS (comma-separated FLAGS_WORKERS values, default 1;
 * the ceiling then runs with as many cluster workers, and server CPU is summed over the workers),
 * e.g. `BENCH_WORKERS=1,2 BENCH_SCENARIOS="one repeated,new userId"`. BENCH_RATE (requests per
 * second over all connections, open loop): the proxy and its ceiling are sent the same rate instead
 * of as many requests as they answer, so their CPU per request compares at equal load (below
 * either's saturation; see docs/performance.md, "The socket write, seen from the kernel").
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { generateFeatures, NEW_USER_QUERY, someNames, type BenchFeatures } from './flags';
import { hostNote } from './host-note';
import { UNIQUE, type LoadJob, type LoadResult } from './load';
import { freePort } from './free-port';

const DURATION = Number(process.env.BENCH_DURATION ?? 3);
const SIZES = (process.env.BENCH_SIZES ?? '20,200,2000').split(',').map(Number);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
/** Requests per second sent to the proxy and to its ceiling alike (open loop); unset: closed loop. */
const RATE = rateOf(process.env.BENCH_RATE);

function rateOf(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const rate = Number(value);
  if (!Number.isFinite(rate) || rate <= 0)
    throw new Error(`BENCH_RATE must be a positive number of requests per second, not ${value}`);
  return rate;
}
const UNIQUE_REQUESTS = Number(process.env.BENCH_UNIQUE_REQUESTS ?? 100_000);
const MEMORY_FLAGS = Number(process.env.BENCH_MEMORY_FLAGS ?? 10_000);
const SKIP_MEMORY = process.env.BENCH_SKIP_MEMORY === '1';
/** Extra node arguments for the proxy process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`. */
const PROXY_NODE_ARGS = (process.env.BENCH_PROXY_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
/** The same for the ceiling (the bare `node:http` server), to profile what Node itself costs. */
const CEILING_NODE_ARGS = (process.env.BENCH_CEILING_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
/** Comma-separated substrings; only scenarios whose name contains one of them run. */
const ONLY = (process.env.BENCH_SCENARIOS ?? '').split(',').filter((s) => s.trim() !== '');
const WORKER_COUNTS = (process.env.BENCH_WORKERS ?? '1').split(',').map(Number);
const TOKEN = 'bench-upstream-token';
const CLIENT_KEY = 'bench-client-key';
const ROOT = path.resolve(__dirname, '..', '..');

const children = new Set<ChildProcess>();

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function killAll(): void {
  for (const child of children) child.kill('SIGKILL');
}
process.once('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAll();
    process.exit(130);
  });
}

/* ---------- the loopback upstream ---------- */

class BenchUpstream {
  private text = '';
  private etag = '';
  private server: http.Server | undefined;
  port = 0;

  setFeatures(features: BenchFeatures): void {
    this.text = JSON.stringify(features);
    this.etag = `"${createHash('sha1').update(this.text).digest('hex')}"`;
  }

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.headers.authorization !== TOKEN) {
          res.writeHead(401).end();
          return;
        }
        if (req.url?.startsWith('/api/client/features')) {
          if (req.headers['if-none-match'] === this.etag) {
            res.writeHead(304, { etag: this.etag }).end();
            return;
          }
          res.writeHead(200, { 'content-type': 'application/json', etag: this.etag }).end(this.text);
          return;
        }
        res.writeHead(req.method === 'POST' ? 202 : 404).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  stop(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  }
}

/* ---------- small HTTP helpers ---------- */

interface Sample {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

function request(
  port: number,
  method: string,
  urlPath: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const out: Record<string, string> = {};
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined && name !== 'date' && name !== 'connection' && name !== 'keep-alive')
            out[name] = Array.isArray(value) ? value.join(', ') : value;
        }
        resolve({ status: res.statusCode ?? 0, headers: out, body: Buffer.concat(chunks) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/* ---------- child processes ---------- */

interface ProxyChild {
  port: number;
  child: ChildProcess;
}

/** `withGc`: run it through `proxy-gc.js`, which answers `gc` IPC messages (memory run). */
async function startProxy(upstreamPort: number, withGc = false, workers = 1): Promise<ProxyChild> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^(FLAGS_|PROXY_|EXP_|HTTPS?_PROXY$|https?_proxy$|ENABLE_|CORS_|TRUST_PROXY)/.test(name))
      delete env[name];
  }
  Object.assign(env, {
    FLAGS_URL: `http://127.0.0.1:${upstreamPort}/api`,
    FLAGS_API_TOKEN: TOKEN,
    FLAGS_PROXY_CLIENT_KEYS: CLIENT_KEY,
    FLAGS_APP_NAME: 'bench-proxy',
    FLAGS_FETCH_INTERVAL: '10000',
    FLAGS_METRICS_INTERVAL: '10000',
    LOG_LEVEL: 'error',
    PORT: String(port),
    NODE_ENV: 'production',
    FLAGS_WORKERS: String(workers),
  });
  const child = track(
    withGc
      ? fork(path.join(__dirname, 'proxy-gc.js'), [], {
          env,
          execArgv: [...PROXY_NODE_ARGS, '--expose-gc'],
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        })
      : spawn(process.execPath, [...PROXY_NODE_ARGS, path.join(ROOT, 'dist/src/bin/flags-proxy.js')], {
          env,
          stdio: ['ignore', 'inherit', 'inherit'],
        }),
  );
  const until = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`proxy exited with ${child.exitCode}`);
    const ok = await (
      workers > 1 ? everyWorkerReady(port, workers) : request(port, 'GET', '/proxy/health')
    ).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return { port, child };
    if (Date.now() > until) throw new Error('proxy did not become ready in 30 s');
    await sleep(50);
  }
}

/** 200 once the aggregated metrics show every worker, each of them ready. */
async function everyWorkerReady(port: number, workers: number): Promise<{ status: number }> {
  const r = await request(port, 'GET', '/proxy/internal-backstage/prometheus', { authorization: CLIENT_KEY });
  const text = r.body.toString('utf8');
  const all =
    new RegExp(`^flags_proxy_workers ${workers}$`, 'm').test(text) && /^flags_proxy_ready 1$/m.test(text);
  return { status: r.status === 200 && all ? 200 : 503 };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

async function startCeiling(workers = 1): Promise<{ port: number; child: ChildProcess }> {
  const child = track(
    fork(path.join(__dirname, 'ceiling.js'), [], {
      execArgv: CEILING_NODE_ARGS,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, BENCH_CEILING_WORKERS: String(workers) },
    }),
  );
  const port = await new Promise<number>((resolve) =>
    child.once('message', (m: { port: number }) => resolve(m.port)),
  );
  return { port, child };
}

/** Runs one load job in its own process; `onMeasuring` is called when its measured part begins. */
function load(job: LoadJob, onMeasuring?: () => void): Promise<LoadResult> {
  const child = track(
    fork(path.join(__dirname, 'load.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  return new Promise((resolve, reject) => {
    child.on('message', (m: { ok?: boolean; measuring?: boolean; result?: LoadResult; error?: string }) => {
      if (m.measuring) {
        onMeasuring?.();
        return;
      }
      if (m.ok && m.result) resolve(m.result);
      else reject(new Error(m.error ?? 'load generator failed'));
    });
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`load generator exited with ${code}`));
    });
    child.send(job);
  });
}

/** CPU time (user + system) a process has used so far, in µs, from /proc (Linux). */
function cpuMicros(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    // After "pid (comm) ": state is field 0, utime field 11, stime field 12, in clock ticks.
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}
const CLOCK_TICKS = 100;

/** The process and its children (cluster workers), from /proc (Linux). */
function processTree(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
      if (ppid === pid) children.push(Number(entry));
    } catch {
      /* exited meanwhile */
    }
  }
  return [pid, ...children];
}

/** Runs a load job and measures the CPU the server process (and its workers) used meanwhile. */
async function measured(job: LoadJob, serverPid: number): Promise<Measured> {
  const pids = processTree(serverPid);
  const cpu = () => pids.reduce((sum, pid) => sum + cpuMicros(pid), 0);
  let before = cpu();
  // the fleet's unmeasured learning pass is not the server's cost of the measured requests
  const result = await load(job, () => {
    before = cpu();
  });
  return { ...result, serverCpuMicros: cpu() - before };
}

interface Measured extends LoadResult {
  serverCpuMicros: number;
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/* ---------- scenarios ---------- */

const CONTEXT_QUERY = NEW_USER_QUERY;
const BODY_CONTEXT = {
  appName: 'web',
  userId: 'user-42',
  sessionId: 'sess-42',
  properties: { plan: 'pro', version: '2.3.1', region: 'eu', age: '31', email: 'ada@example.com' },
};

/** What Chromium and Firefox send: the answer comes back Brotli-compressed. */
const BROWSER_ACCEPT_ENCODING = 'gzip, deflate, br, zstd';

/** The same user as BODY_CONTEXT, as an OpenFeature provider sends it. */
const OFREP_CONTEXT = {
  targetingKey: 'user-42',
  sessionId: 'sess-42',
  appName: 'web',
  ...BODY_CONTEXT.properties,
};

interface Scenario {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  uniqueContexts: boolean;
  /** The sample request to take the ceiling's bytes from, when it differs from the load request. */
  samplePath?: string;
  /** Distinct users each revalidating its own last ETag (see load.ts). */
  fleetUsers?: number;
}

/** Users in the fleet scenario. */
const FLEET_USERS = Number(process.env.BENCH_FLEET_USERS ?? 20_000);
/**
 * The fleet runs for flag sets up to this size: its unmeasured learning pass is one full
 * evaluation per user, minutes at 2,000 flags.
 */
const FLEET_MAX_FLAGS = Number(process.env.BENCH_FLEET_MAX_FLAGS ?? 200);

function scenarios(features: BenchFeatures): Scenario[] {
  const auth = { authorization: CLIENT_KEY };
  const json = { ...auth, 'content-type': 'application/json' };
  const repeated = `/proxy?userId=user-42&sessionId=sess-42&${CONTEXT_QUERY}`;
  const fleet = features.features.length <= FLEET_MAX_FLAGS;
  const all: (Scenario | false)[] = [
    {
      name: 'GET /proxy, one repeated context',
      method: 'GET',
      path: repeated,
      headers: auth,
      uniqueContexts: false,
    },
    {
      name: 'GET /proxy, new userId+sessionId per request',
      method: 'GET',
      path: `/proxy?${CONTEXT_QUERY}`,
      samplePath: `/proxy?${CONTEXT_QUERY}&userId=u-sample&sessionId=s-sample`,
      headers: auth,
      uniqueContexts: true,
    },
    {
      // a new user whose query carries nothing else: no property for a constraint to read
      name: 'GET /proxy, a new user with only userId+sessionId',
      method: 'GET',
      path: '/proxy?',
      samplePath: '/proxy?userId=u-sample&sessionId=s-sample',
      headers: auth,
      uniqueContexts: true,
    },
    {
      // what a browser's request costs: every browser sends this, and the answer is compressed
      name: 'GET /proxy, a browser (Accept-Encoding with br) with a new user per request',
      method: 'GET',
      path: `/proxy?${CONTEXT_QUERY}`,
      samplePath: `/proxy?${CONTEXT_QUERY}&userId=u-sample&sessionId=s-sample`,
      headers: { ...auth, 'accept-encoding': BROWSER_ACCEPT_ENCODING },
      uniqueContexts: true,
    },
    {
      name: 'POST /proxy with a context',
      method: 'POST',
      path: '/proxy',
      headers: json,
      body: JSON.stringify({ context: BODY_CONTEXT }),
      uniqueContexts: false,
    },
    {
      name: 'POST /proxy, a new user in the body',
      method: 'POST',
      path: '/proxy',
      headers: json,
      body: JSON.stringify({ context: { ...BODY_CONTEXT, userId: `u-${UNIQUE}`, sessionId: `s-${UNIQUE}` } }),
      uniqueContexts: true,
    },
    {
      name: 'POST /proxy with 20 named toggles',
      method: 'POST',
      path: '/proxy',
      headers: json,
      body: JSON.stringify({ context: BODY_CONTEXT, toggles: someNames(features, 20) }),
      uniqueContexts: false,
    },
    {
      name: 'GET /proxy revalidated (304)',
      method: 'GET',
      path: repeated,
      headers: auth,
      uniqueContexts: false,
    },
    {
      name: 'POST /ofrep/v1/evaluate/flags (bulk, OpenFeature)',
      method: 'POST',
      path: '/ofrep/v1/evaluate/flags',
      headers: json,
      body: JSON.stringify({ context: OFREP_CONTEXT }),
      uniqueContexts: false,
    },
    {
      name: 'POST /ofrep/v1/evaluate/flags, a new targetingKey',
      method: 'POST',
      path: '/ofrep/v1/evaluate/flags',
      headers: json,
      body: JSON.stringify({
        context: { ...OFREP_CONTEXT, targetingKey: `u-${UNIQUE}`, sessionId: `s-${UNIQUE}` },
      }),
      uniqueContexts: true,
    },
    {
      name: 'POST /ofrep/v1/evaluate/flags revalidated (304)',
      method: 'POST',
      path: '/ofrep/v1/evaluate/flags',
      headers: json,
      body: JSON.stringify({ context: OFREP_CONTEXT }),
      uniqueContexts: false,
    },
    fleet && {
      name: `GET /proxy, ${FLEET_USERS} users each revalidating its own ETag (304)`,
      method: 'GET',
      path: `/proxy?${CONTEXT_QUERY}`,
      samplePath: `/proxy?${CONTEXT_QUERY}&userId=fleet-user-0`,
      headers: auth,
      uniqueContexts: false,
      fleetUsers: FLEET_USERS,
    },
    {
      name: 'GET /proxy with a wrong client key (401)',
      method: 'GET',
      path: repeated,
      headers: { authorization: 'not-a-client-key' },
      uniqueContexts: false,
    },
  ];
  return all.filter((s): s is Scenario => s !== false);
}

interface Row {
  n: number;
  scenario: string;
  proxy: Measured;
  ceiling: Measured;
  bytes: number;
  status: number;
  /** For a compressed answer, the size of the same answer uncompressed (the ratio is printed). */
  identityBytes?: number;
}

async function measureCell(
  proxy: ProxyChild,
  ceiling: { port: number; child: ChildProcess },
  scenario: Scenario,
  n: number,
): Promise<Row> {
  const headers = { ...scenario.headers };
  if (scenario.name.includes('304')) {
    const first = await request(
      proxy.port,
      scenario.method,
      scenario.samplePath ?? scenario.path,
      scenario.headers,
      scenario.body,
    );
    headers['if-none-match'] = first.headers.etag ?? '';
  }
  const sample = await request(
    proxy.port,
    scenario.method,
    scenario.samplePath ?? scenario.path,
    headers,
    scenario.body,
  );
  // a compressed answer: the same request without Accept-Encoding, for its compression ratio
  const identity =
    sample.headers['content-encoding'] === undefined
      ? undefined
      : await request(
          proxy.port,
          scenario.method,
          scenario.samplePath ?? scenario.path,
          Object.fromEntries(Object.entries(headers).filter(([name]) => name !== 'accept-encoding')),
          scenario.body,
        );
  await request(
    ceiling.port,
    'PUT',
    '/__ceiling',
    { 'content-type': 'application/json' },
    JSON.stringify({ status: sample.status, headers: sample.headers, body: sample.body.toString('base64') }),
  );
  const job = (port: number, duration: number): LoadJob => ({
    url: `http://127.0.0.1:${port}`,
    method: scenario.method,
    path: scenario.path,
    headers,
    body: scenario.body,
    connections: CONNECTIONS,
    duration,
    rate: RATE,
    uniqueContexts: scenario.uniqueContexts,
    fleetUsers: scenario.fleetUsers,
  });
  await load(job(proxy.port, 1)); // warm-up: JIT and caches, not measured
  return {
    n,
    scenario: scenario.name,
    proxy: await measured(job(proxy.port, DURATION), proxy.child.pid ?? 0),
    ceiling: await measured(job(ceiling.port, DURATION), ceiling.child.pid ?? 0),
    bytes: sample.body.length,
    status: sample.status,
    identityBytes: identity?.body.length,
  };
}

function fmt(row: Row): string {
  const ratio = row.ceiling.rps > 0 ? (100 * row.proxy.rps) / row.ceiling.rps : 0;
  const errors = row.proxy.errors + row.proxy.timeouts;
  const perRequest = (micros: number, result: Measured) =>
    result.requests > 0 && Number.isFinite(micros) ? (micros / result.requests).toFixed(0) : '?';
  const server = `${perRequest(row.proxy.serverCpuMicros, row.proxy)} / ${perRequest(row.ceiling.serverCpuMicros, row.ceiling)}`;
  const loader = `${perRequest(row.proxy.cpuMicros, row.proxy)} / ${perRequest(row.ceiling.cpuMicros, row.ceiling)}`;
  // a compressed answer: its ratio and its uncompressed size, e.g. `1064 B (14.1 × of 14992 B)`
  const compression =
    row.identityBytes === undefined || row.bytes === 0
      ? ''
      : ` (${(row.identityBytes / row.bytes).toFixed(1)} × of ${row.identityBytes} B)`;
  return `| ${row.n} | ${row.scenario} | ${row.status} ${row.bytes} B${compression} | ${Math.round(row.proxy.rps)} | ${row.proxy.p50} | ${row.proxy.p99} | ${Math.round(row.ceiling.rps)} | ${ratio.toFixed(1)}% | ${server} | ${loader} |${errors ? ` ${errors} errors` : ''}`;
}

interface MemoryNow {
  /** Resident set size, MB. */
  rss: number;
  /** V8 heap in use right after two full collections, MB: what is retained. */
  heapAfterGc: number;
}

/** Asks the proxy (started `withGc`) to collect garbage, then reads its memory. */
function memoryNow(proxy: ProxyChild): Promise<MemoryNow> {
  return new Promise((resolve) => {
    proxy.child.once('message', (usage: NodeJS.MemoryUsage) => {
      resolve({ rss: rssMb(proxy.child.pid ?? 0), heapAfterGc: usage.heapUsed / 1024 / 1024 });
    });
    proxy.child.send('gc');
  });
}

async function memory(upstream: BenchUpstream): Promise<string[]> {
  const lines: string[] = [];
  upstream.setFeatures(generateFeatures(MEMORY_FLAGS));
  let proxy = await startProxy(upstream.port);
  await request(proxy.port, 'GET', `/proxy?userId=user-42&${CONTEXT_QUERY}`, { authorization: CLIENT_KEY });
  await sleep(500);
  lines.push(
    `RSS with ${MEMORY_FLAGS} flags loaded (after one request): ${rssMb(proxy.child.pid ?? 0).toFixed(0)} MB`,
  );
  await stopChild(proxy.child);

  upstream.setFeatures(generateFeatures(200));
  proxy = await startProxy(upstream.port, true);
  const unique = (amount: number): LoadJob => ({
    url: `http://127.0.0.1:${proxy.port}`,
    method: 'GET',
    path: `/proxy?${CONTEXT_QUERY}`,
    headers: { authorization: CLIENT_KEY },
    connections: CONNECTIONS,
    duration: 0,
    amount,
    uniqueContexts: true,
  });
  // Long enough for the bounded caches (10,000 contexts and doorkeeper keys) to fill and cycle, and
  // for V8 to size its young generation to the allocation rate; growth is measured after it.
  const warm = Math.min(30_000, UNIQUE_REQUESTS);
  await load(unique(warm));
  const afterWarm = await memoryNow(proxy);
  const started = Date.now();
  // In five parts, so a trend shows apart from the noise of V8's heap sizing.
  const parts: MemoryNow[] = [];
  let served = 0;
  for (let part = 0; part < 5; part += 1) {
    served += (await load(unique(Math.ceil(UNIQUE_REQUESTS / 5)))).requests;
    parts.push(await memoryNow(proxy));
  }
  const last = parts[parts.length - 1];
  lines.push(
    `RSS with 200 flags after ${warm} unique-context requests (warm-up): ${afterWarm.rss.toFixed(0)} MB; ` +
      `after ${served} more (${((Date.now() - started) / 1000).toFixed(0)} s): ${last.rss.toFixed(0)} MB ` +
      `(growth ${(last.rss - afterWarm.rss).toFixed(1)} MB)`,
    `  RSS after each fifth: ${parts.map((p) => p.rss.toFixed(0)).join(', ')} MB; ` +
      `V8 heap retained after a full GC (warm-up, then each fifth): ${[afterWarm, ...parts].map((p) => p.heapAfterGc.toFixed(1)).join(', ')} MB`,
  );
  await stopChild(proxy.child);
  return lines;
}

async function main(): Promise<void> {
  const started = Date.now();
  console.log(
    `flags-proxy bench: ${os.cpus().length} CPUs, node ${process.version}, load before: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const note = hostNote();
  if (note !== undefined) console.log(note);
  const rate = RATE === undefined ? '' : `, ${RATE} requests/s sent to each server (open loop)`;
  console.log(`${DURATION}s per cell, ${CONNECTIONS} connections${rate}, sizes ${SIZES.join(', ')}\n`);
  const upstream = new BenchUpstream();
  await upstream.start();
  console.log(
    '| N | scenario | answer | req/s | p50 ms | p99 ms | ceiling req/s | of ceiling | server CPU µs/req (proxy / ceiling) | load-gen CPU µs/req (proxy / ceiling) |',
  );
  console.log('|---:|---|---|---:|---:|---:|---:|---:|---:|---:|');
  try {
    for (const workers of WORKER_COUNTS) {
      const ceiling = await startCeiling(workers);
      const label = WORKER_COUNTS.length > 1 || workers > 1 ? ` [${workers} workers]` : '';
      try {
        for (const n of SIZES) {
          const features = generateFeatures(n);
          upstream.setFeatures(features);
          const proxy = await startProxy(upstream.port, false, workers);
          try {
            for (const scenario of scenarios(features)) {
              if (ONLY.length > 0 && !ONLY.some((part) => scenario.name.includes(part.trim()))) continue;
              const row = await measureCell(proxy, ceiling, scenario, n);
              console.log(fmt({ ...row, scenario: `${row.scenario}${label}` }));
            }
          } finally {
            await stopChild(proxy.child);
          }
        }
      } finally {
        await stopChild(ceiling.child);
      }
    }
    console.log('');
    if (!SKIP_MEMORY) for (const line of await memory(upstream)) console.log(line);
  } finally {
    await upstream.stop();
  }
  console.log(
    `\ndone in ${((Date.now() - started) / 1000).toFixed(0)} s; load after: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  killAll();
  process.exit(1);
});
