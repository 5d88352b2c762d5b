/**
 * Many project scopes in one environment: 2,000 toggles (BENCH_SCOPE_FLAGS) in 40 projects, one
 * project-limited key per project (BENCH_SCOPES keys), and GET /proxy with each key in turn (round
 * robin) over one keep-alive connection, one request at a time. Prints the mean time and CPU time
 * per request, client included (the same process), and the retained heap after a full GC. Run with `--expose-gc`:
 * `npm run build && node --expose-gc dist/bench/scopes.js`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../src';
import { generateFeatures } from './flags';

const FLAGS = Number(process.env.BENCH_SCOPE_FLAGS ?? 2000);
const SCOPES = Number(process.env.BENCH_SCOPES ?? 40);
const ROUNDS = Number(process.env.BENCH_SCOPE_ROUNDS ?? 50);
const PROJECTS = 40;

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

function retainedMb(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return Number.NaN;
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

async function main(): Promise<void> {
  const generated = generateFeatures(FLAGS);
  const features = generated.features.map((f, i) => ({ ...(f as object), project: `p${i % PROJECTS}` }));
  const definitions = JSON.stringify({ ...generated, features });
  const upstream = http.createServer((req, res) => {
    req.resume();
    if (req.url?.includes('client/features')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(definitions);
    } else {
      res.writeHead(202).end();
    }
  });
  const upstreamPort = await listen(upstream);
  // A project-limited key per scope, in Unleash's format (`project:environment.secret`).
  const keys = Array.from({ length: SCOPES }, (_, k) => `p${k % PROJECTS}:development.scope-key-${k}`);
  const app = createApp(
    {
      flagsUrl: `http://127.0.0.1:${upstreamPort}/api`,
      flagsApiToken: '*:development.bench-upstream',
      clientKeys: keys,
      refreshInterval: 60_000,
      metricsInterval: 60_000,
      logger: { debug() {}, info() {}, warn() {}, error() {}, fatal() {} },
    },
    {},
  );
  await app.whenReady();
  const server = http.createServer(app);
  server.keepAliveTimeout = 60_000;
  const port = await listen(server);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = (key: string) =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(
        { port, host: '127.0.0.1', path: '/proxy?userId=u1', agent, headers: { authorization: key } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end();
    });
  for (let i = 0; i < 2 * SCOPES; i++) await get(keys[i % SCOPES]); // warm-up
  let failed = 0;
  const started = performance.now();
  const cpu = process.cpuUsage();
  const total = ROUNDS * SCOPES;
  for (let i = 0; i < total; i++) if ((await get(keys[i % SCOPES])) !== 200) failed += 1;
  const ms = (performance.now() - started) / total;
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000 / total;
  console.log(
    `${FLAGS} toggles, ${SCOPES} scopes round robin: ${ms.toFixed(3)} ms per GET /proxy, ${cpuMs.toFixed(3)} ms CPU (${total} requests, non-200: ${failed}), retained heap ${retainedMb().toFixed(1)} MB`,
  );
  agent.destroy();
  server.close();
  await app.close();
  upstream.close();
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
