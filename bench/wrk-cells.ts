/**
 * A new user's GET, the kept answer and their ceiling measured with `wrk` (a C load generator, one
 * thread, 32 connections), as the targets of a new user's cost were set: server CPU per request
 * of the proxy (`dist/src/bin/flags-proxy.js`, one process, configured by environment variables)
 * and of the bare `node:http` ceiling writing the new user's own response, read from `/proc`.
 *
 * `node dist/bench/wrk-cells.js [flags] [rounds] [seconds]` (default 200, 3, 5): after a warm-up,
 * each round runs every cell once, in turn — a new user with the bench's properties, a new user
 * with only userId and sessionId, a browser's new user (its answer Brotli-compressed per request:
 * the difference to the first cell is the encoder's), one repeated context (the kept answer), and
 * the ceiling of the uncompressed new user's bytes — so a busy host slows them alike. Printed:
 * each cell's µs per round, the median, its requests per second and p99, and the medians' ratios
 * to the ceiling. Needs `wrk` on the PATH (Debian: `apt-get install wrk`). `npm run bench` stays
 * the full table; this reads the same rows with the other load generator.
 *
 * With `--floors`, seven more proxies each answer the new user's GET with properties with steps of
 * it at their floor (`floors.ts`: the query, the canonical context and digest, the evaluation and
 * template loop, the whole answer, the digest and answer together, and the whole engine), and one
 * with its answer written by the least code for these definitions (`minimal-answer.ts`), in the
 * same rounds: what each step costs over HTTP above its floor, as the median of the rounds' ratios
 * to the real proxy's new user (each round reads both within seconds) times the real proxy's
 * median µs.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { startCeiling, type CeilingAnswer } from './ceiling-process';
import { definitionsUpstream } from './definitions-upstream';
import { NEW_USER_QUERY } from './flags';
import { freePort } from './free-port';
import { hostNote } from './host-note';
import { cpuNanos } from './process-cpu';
import { spawnProxy } from './proxy-process';

const FLOORS = process.argv.includes('--floors');
const [flagsArg = '200', roundsArg = '3', secondsArg = '5'] = process.argv
  .slice(2)
  .filter((arg) => !arg.startsWith('--'));
const FLAGS = Number(flagsArg);
const ROUNDS = Number(roundsArg);
const SECONDS = Number(secondsArg);
const CONNECTIONS = 32;
const KEY = 'wrk-cells-key';
/** The bench's query of a new user's fields besides the ids, all read by constraints. */
const QUERY = NEW_USER_QUERY;
const KEPT_PATH = `/proxy?userId=user-42&sessionId=sess-42&${QUERY}`;
/** What a browser sends (`run.ts`'s browser row): its answer is compressed per request. */
const BROWSER_ACCEPT_ENCODING = 'gzip, deflate, br, zstd';

/** A server the cells load: its port and its process (whose CPU is read). */
interface Server {
  readonly port: number;
  readonly child: ChildProcess;
}

interface Cell {
  readonly name: string;
  /** The wrk script's file name (`scripts`). */
  readonly script: string;
  readonly server: Server;
  readonly runs: { us: number; rps: number; p99: number }[];
}

/**
 * With `--floors`: proxies with steps of a new user's request at their floor (`floors.ts`), each
 * loaded with the new user's GET with properties beside the real proxy.
 */
const FLOOR_CELLS: readonly { readonly floors: string; readonly name: string }[] = [
  { floors: 'query', name: 'the same, query → context at its floor' },
  { floors: 'digest', name: 'the same, canonical context and digest at their floor' },
  { floors: 'minimal', name: 'the same, the answer by the least code for these definitions' },
  { floors: 'join', name: 'the same, evaluation and templates at their floor, the real join' },
  { floors: 'answer', name: 'the same, evaluation, templates and join at their floor' },
  { floors: 'digest,answer', name: 'the same, digest and answer at their floors' },
  { floors: 'engine', name: 'the same, the whole engine at its floor' },
];

/** wrk scripts: a new user per request (unique ids for this run), or one path over and over. */
function scripts(dir: string): void {
  const newUser = (prefix: string, extra = '') => `
wrk.headers["Authorization"] = "${KEY}"${extra}
local n = 0
local base = tostring(os.time()) .. "-" .. tostring(math.random(1, 1000000000))
request = function()
  n = n + 1
  local id = base .. "-" .. n
  return wrk.format("GET", "${prefix}userId=u-" .. id .. "&sessionId=s-" .. id)
end
`;
  writeFileSync(path.join(dir, 'new-user.lua'), newUser(`/proxy?${QUERY}&`));
  writeFileSync(path.join(dir, 'ids-only.lua'), newUser('/proxy?'));
  writeFileSync(
    path.join(dir, 'browser.lua'),
    newUser(`/proxy?${QUERY}&`, `\nwrk.headers["Accept-Encoding"] = "${BROWSER_ACCEPT_ENCODING}"`),
  );
  writeFileSync(
    path.join(dir, 'kept.lua'),
    `wrk.headers["Authorization"] = "${KEY}"\nwrk.path = "${KEPT_PATH}"\n`,
  );
}

/** wrk's duration in milliseconds (`2.31ms`, `812.00us`, `1.02s`). */
function millis(text: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (match === null) return Number.NaN;
  const value = Number(match[1]);
  return match[2] === 'us'
    ? value / 1000
    : match[2] === 'ms'
      ? value
      : match[2] === 's'
        ? value * 1000
        : value * 60_000;
}

/** Runs wrk against `port` with `script` for `seconds`: requests answered and p99 in ms. */
function wrk(port: number, script: string, seconds: number): { requests: number; p99: number } {
  const out = execFileSync(
    'wrk',
    ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency', '-s', script, `http://127.0.0.1:${port}/`],
    { encoding: 'utf8' },
  );
  const requests = /(\d+) requests in/.exec(out);
  const p99 = /\s99%\s+(\S+)/.exec(out);
  if (requests === null || p99 === null) throw new Error(`wrk printed no count:\n${out}`);
  if (/Non-2xx or 3xx responses/.test(out)) throw new Error(`the server refused requests:\n${out}`);
  return { requests: Number(requests[1]), p99: millis(p99[1]) };
}

function get(port: number, urlPath: string): Promise<CeilingAnswer> {
  return new Promise((resolve, reject) => {
    http
      .get(
        { host: '127.0.0.1', port, path: urlPath, headers: { authorization: KEY }, agent: false },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const headers: Record<string, string> = {};
            for (const [name, value] of Object.entries(res.headers))
              if (
                typeof value === 'string' &&
                name !== 'date' &&
                name !== 'connection' &&
                name !== 'keep-alive'
              )
                headers[name] = value;
            resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
          });
        },
      )
      .on('error', reject);
  });
}

async function startProxy(upstreamPort: number, floors?: string): Promise<Server> {
  const port = await freePort();
  const child = spawnProxy(
    path.join(__dirname, '..', '..'),
    upstreamPort,
    port,
    KEY,
    floors === undefined
      ? {}
      : { nodeArgs: ['--require', path.join(__dirname, 'floors.js')], env: { BENCH_FLOORS: floors } },
  );
  const until = Date.now() + 30_000;
  for (;;) {
    const ready = await get(port, '/proxy/health').then(
      (answer) => answer.status === 200,
      () => false,
    );
    if (ready) return { port, child };
    if (Date.now() > until) throw new Error('no ready proxy in 30 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const median = (values: readonly number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main(): Promise<void> {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
  } catch (err) {
    // wrk prints its version and exits 1; only a missing program is an error here
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      console.error('wrk-cells: wrk is not installed (Debian: apt-get install wrk)');
      process.exit(1);
    }
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wrk-cells-'));
  const children: ChildProcess[] = [];
  process.once('exit', () => {
    for (const child of children) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  scripts(dir);
  const upstream = await definitionsUpstream(FLAGS);
  const proxy = await startProxy(upstream.port);
  children.push(proxy.child);
  const sample = await get(proxy.port, `/proxy?${QUERY}&userId=u-sample&sessionId=s-sample`);
  if (sample.status !== 200) throw new Error(`the proxy answered ${sample.status}`);
  const ceiling = await startCeiling(sample);
  children.push(ceiling.child);
  const floorCells: Cell[] = [];
  for (const { floors, name } of FLOORS ? FLOOR_CELLS : []) {
    const server = await startProxy(upstream.port, floors);
    children.push(server.child);
    floorCells.push({ name, script: 'new-user.lua', server, runs: [] });
  }
  const cells: Cell[] = [
    { name: 'a new user, GET with properties', script: 'new-user.lua', server: proxy, runs: [] },
    ...floorCells,
    { name: 'a new user, GET with only userId+sessionId', script: 'ids-only.lua', server: proxy, runs: [] },
    {
      name: "a browser's new user (Accept-Encoding with br)",
      script: 'browser.lua',
      server: proxy,
      runs: [],
    },
    { name: 'one repeated context (kept answer)', script: 'kept.lua', server: proxy, runs: [] },
    {
      name: "bare Node writing the new user's bytes (ceiling)",
      script: 'kept.lua',
      server: ceiling,
      runs: [],
    },
  ];
  const note = hostNote();
  console.log(
    `wrk-cells: ${FLAGS} flags, a new user's answer ${sample.body.length} B, wrk -t1 -c${CONNECTIONS}, ` +
      `${ROUNDS} rounds of ${SECONDS} s, ${os.cpus().length} CPUs, load ${os.loadavg()[0].toFixed(2)}` +
      (note === undefined ? '' : `\n${note}`),
  );
  // warm-up: compilation, memo rows, templates
  for (const cell of cells) wrk(cell.server.port, path.join(dir, cell.script), 2);
  for (let round = 0; round < ROUNDS; round++) {
    for (const cell of cells) {
      const pid = cell.server.child.pid ?? 0;
      const before = cpuNanos(pid);
      const { requests, p99 } = wrk(cell.server.port, path.join(dir, cell.script), SECONDS);
      cell.runs.push({ us: (cpuNanos(pid) - before) / requests / 1000, rps: requests / SECONDS, p99 });
    }
  }
  const ceilingUs = median(cells[cells.length - 1].runs.map((r) => r.us));
  console.log('| cell | server CPU µs/req, each round | median | req/s | p99 ms | × ceiling |');
  console.log('|---|---|---:|---:|---:|---:|');
  for (const cell of cells) {
    const us = median(cell.runs.map((r) => r.us));
    console.log(
      `| ${cell.name} | ${cell.runs.map((r) => r.us.toFixed(1)).join(' / ')} | ${us.toFixed(1)} | ` +
        `${Math.round(median(cell.runs.map((r) => r.rps)))} | ${median(cell.runs.map((r) => r.p99)).toFixed(1)} | ` +
        `${(us / ceilingUs).toFixed(2)} |`,
    );
  }
  if (floorCells.length > 0) {
    // each round's floor cell against the real proxy's new user of the same round
    const real = cells[0].runs;
    const realUs = median(real.map((r) => r.us));
    console.log(
      '\n| a new user, GET with properties | × the real proxy, median of rounds | µs above the floor |',
    );
    console.log('|---|---:|---:|');
    for (const cell of floorCells) {
      const ratio = median(cell.runs.map((r, i) => r.us / real[i].us));
      console.log(`| ${cell.name} | ${ratio.toFixed(3)} | ${(realUs * (1 - ratio)).toFixed(1)} |`);
    }
  }
  upstream.close();
  process.exit(0);
}

void main();
