import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { sampleFeatures } from '../../support/fixtures';
import { waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';
import { childPort } from '../../support/listen';

// Prometheus scrapes are cheap with workers (README "Scaling out"): the primary aggregates once per
// `prometheusCacheInterval` for every scrape, with one message listener however many scrapes wait.
// Runs the built program (`npm test` builds first).
const BIN = path.resolve(__dirname, '../../../dist/src/bin/flags-proxy.js');
const KEY = 'scrape-key';
const SCRAPE = '/proxy/internal-backstage/prometheus';

jest.setTimeout(180_000);

let upstream: TestUpstream;
let child: ChildProcess | undefined;
let output = '';

beforeAll(() => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm test does it first)`);
});
beforeEach(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
});
afterEach(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child?.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  child = undefined;
  await upstream.stop();
});

async function startCluster(): Promise<number> {
  output = '';
  child = spawn(process.execPath, [BIN], {
    env: {
      PATH: process.env.PATH ?? '',
      FLAGS_URL: upstream.url,
      FLAGS_API_TOKEN: upstream.token,
      FLAGS_PROXY_CLIENT_KEYS: KEY,
      PORT: '0',
      FLAGS_WORKERS: '2',
      FLAGS_METRICS_INTERVAL: '600000',
      LOG_LEVEL: 'warn',
    },
    stdio: 'pipe',
  });
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  // the port the kernel chose, held by the primary and shared with the workers
  const port = await childPort(child, () => output);
  // Every worker ready, not just the first to listen: a connection reaches only listening workers,
  // so a few good answers can all come from one while the other is still synchronising (and answers
  // 503). The aggregated scrape counts the workers that answered and takes the lowest readiness.
  await waitFor(async () => {
    try {
      const { status, text } = await scrape(port);
      return status === 200 && /^flags_proxy_workers 2$/m.test(text) && /^flags_proxy_ready 1$/m.test(text);
    } catch {
      return false;
    }
  }, 30_000);
  return port;
}

/** One scrape on a connection of its own: status and text (timed out like `get`). */
function scrape(port: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(
      { host: '127.0.0.1', port, path: SCRAPE, agent: false, headers: { authorization: KEY } },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`${SCRAPE} timed out`)));
    req.on('error', reject);
  });
}

/** One request; `keepAlive` uses the given agent, otherwise a connection of its own. */
function get(port: number, pathname: string, agent: http.Agent | false): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: pathname, agent, headers: { authorization: KEY } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`${pathname} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** `count` requests to `pathname` by `concurrency` clients; the ms they took. */
async function load(port: number, pathname: string, count: number, concurrency: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const started = performance.now();
  let next = 0;
  const client = async () => {
    while (next < count) {
      next += 1;
      expect(await get(port, pathname, agent)).toBe(200);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  agent.destroy();
  return performance.now() - started;
}

test('a scrape flood leaves evaluation throughput with two workers at least half of what it is without one', async () => {
  const port = await startCluster();
  const evaluations = 2000;
  await load(port, '/proxy?userId=warm', 300, 8);
  const ratios: number[] = [];
  for (let round = 0; round < 2; round++) {
    const quiet = await load(port, `/proxy?userId=u${round}`, evaluations, 8);
    // The flood: about 100 scrapes a second (one every 10 ms, at most 32 waiting).
    let scrapes = 0;
    let waiting = 0;
    const floodAgent = new http.Agent({ keepAlive: true, maxSockets: 32 });
    const failures: unknown[] = [];
    const timer = setInterval(() => {
      if (waiting >= 32) return;
      waiting += 1;
      get(port, SCRAPE, floodAgent)
        .then((status) => {
          if (status !== 200) failures.push(status);
          scrapes += 1;
        })
        .catch((err: unknown) => failures.push(err))
        .finally(() => (waiting -= 1));
    }, 10);
    const flooded = await load(port, `/proxy?userId=v${round}`, evaluations, 8);
    clearInterval(timer);
    await waitFor(() => waiting === 0, 20_000);
    floodAgent.destroy();
    expect(failures).toEqual([]);
    expect(scrapes).toBeGreaterThan(20); // the flood was real
    ratios.push(quiet / flooded); // throughput with the flood / throughput without
  }
  // the better round: a neighbour's CPU burst in one round is not the proxy's doing
  expect(Math.max(...ratios)).toBeGreaterThanOrEqual(0.5);
});

test('many concurrent scrapes with workers leave no MaxListenersExceededWarning and see the spec metrics', async () => {
  const port = await startCluster();
  // 60 at once: far past Node's 10-listener warning, without starving a loaded CI machine's primary
  const statuses = await Promise.all(Array.from({ length: 60 }, () => get(port, SCRAPE, false)));
  expect(statuses.filter((s) => s !== 200)).toEqual([]);
  const { status, text } = await scrape(port);
  expect(status).toBe(200);
  for (const name of [
    'flags_proxy_up',
    'last_metrics_update_epoch_timestamp_ms',
    'last_metrics_fetch_epoch_timestamp_ms',
  ])
    expect(text).toMatch(new RegExp(`^${name} \\d+`, 'm'));
  expect(text).toMatch(/^flags_proxy_workers 2$/m);
  expect(output).not.toContain('MaxListenersExceededWarning');
});
