/**
 * Memory under hostile traffic: 1,500 POST /proxy requests (BENCH_FLOOD_REQUESTS), each with
 * ~30 KB (BENCH_FLOOD_KB) of unique `properties`, under one client key, against 200 flags. Prints
 * the V8 heap retained after a full GC before and after the flood. Run with `--expose-gc`:
 * `node --expose-gc dist/bench/heap-flood.js`.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../src';
import { generateFeatures } from './flags';

const REQUESTS = Number(process.env.BENCH_FLOOD_REQUESTS ?? 1500);
const KB = Number(process.env.BENCH_FLOOD_KB ?? 30);
const KEY = 'flood-key';

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

function retainedMb(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

async function main(): Promise<void> {
  const definitions = JSON.stringify(generateFeatures(200));
  const upstream = http.createServer((req, res) => {
    if (req.url?.includes('client/features')) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(definitions);
    } else {
      req.resume();
      res.writeHead(202).end();
    }
  });
  const upstreamPort = await listen(upstream);
  const app = createApp(
    {
      flagsUrl: `http://127.0.0.1:${upstreamPort}/api`,
      flagsApiToken: 'bench-token',
      clientKeys: [KEY],
      refreshInterval: 60_000,
      metricsInterval: 60_000,
    },
    {},
  );
  await app.whenReady();
  const server = http.createServer(app);
  server.keepAliveTimeout = 60_000;
  const port = await listen(server);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const post = (body: string) =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          port,
          host: '127.0.0.1',
          path: '/proxy',
          method: 'POST',
          agent,
          headers: { authorization: KEY, 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const bodyFor = (i: number) => {
    const properties: Record<string, string> = {};
    for (let p = 0; p < KB; p++) properties[`p${p}-${i}`] = `${i}-${p}-`.padEnd(1000, 'x');
    return JSON.stringify({ context: { userId: `u${i}`, properties } });
  };
  for (let i = 0; i < 50; i++) await post(bodyFor(-i - 1)); // warm-up
  const before = retainedMb();
  let failed = 0;
  for (let i = 0; i < REQUESTS; i += 8) {
    const statuses = await Promise.all(Array.from({ length: 8 }, (_, j) => post(bodyFor(i + j))));
    failed += statuses.filter((s) => s !== 200).length;
  }
  const after = retainedMb();
  console.log(
    `${REQUESTS} POST /proxy with ~${KB} KB unique properties: retained heap ${before.toFixed(1)} MB -> ${after.toFixed(1)} MB (+${(after - before).toFixed(1)} MB), non-200: ${failed}`,
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
