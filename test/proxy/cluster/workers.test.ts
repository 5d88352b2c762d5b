import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { sampleFeatures } from '../../support/fixtures';
import { waitFor } from '../../support/proxy';
import { TestUpstream, type CapturedRequest } from '../../support/upstream';
import { childPort } from '../../support/listen';

// Runs the built program exactly as `npm start` does; `npm test` builds first (pretest).
const BIN = path.resolve(__dirname, '../../../dist/src/bin/flags-proxy.js');
const KEY = 'cluster-key';

jest.setTimeout(120_000);

interface Run {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

function run(env: Record<string, string>): Run {
  const child = spawn(process.execPath, [BIN], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: 'pipe',
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, output: () => stdout + stderr, exited };
}

interface Answer {
  status: number;
  worker: string | undefined;
  body: string;
}

/** One request on its own connection, so the cluster hands it to any worker. */
function get(port: number, pathname: string, method = 'GET', body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: pathname,
        method,
        agent: false,
        headers: {
          authorization: KEY,
          connection: 'close',
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            worker: res.headers['x-flags-proxy-worker'] as string,
            body: text,
          }),
        );
      },
    );
    req.setTimeout(5000, () => req.destroy(new Error(`${method} ${pathname} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

async function healthWorkers(port: number, times: number): Promise<Set<string>> {
  const seen = new Set<string>();
  for (let i = 0; i < times; i++) {
    const res = await get(port, '/proxy/health');
    if (res.status === 200 && res.worker) seen.add(res.worker);
  }
  return seen;
}

function pidsOfWorkers(output: string): Map<string, number> {
  const pids = new Map<string, number>();
  for (const m of output.matchAll(/worker (\d+) started \(pid (\d+)\)/g)) pids.set(m[1], Number(m[2]));
  return pids;
}

let upstream: TestUpstream;
let proxy: Run | undefined;

beforeAll(() => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm test does it first)`);
});
beforeEach(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
});
afterEach(async () => {
  if (proxy && proxy.child.exitCode === null) {
    proxy.child.kill('SIGKILL');
    await proxy.exited;
  }
  proxy = undefined;
  await upstream.stop();
});

/** Two workers on a port the kernel chooses (PORT=0), held by the primary: `childPort` reads it. */
function startCluster(extra: Record<string, string> = {}): Run {
  proxy = run({
    FLAGS_URL: upstream.url,
    FLAGS_API_TOKEN: upstream.token,
    FLAGS_PROXY_CLIENT_KEYS: KEY,
    PORT: '0',
    FLAGS_WORKERS: '2',
    FLAGS_METRICS_INTERVAL: '600000',
    FLAGS_FETCH_INTERVAL: '500',
    FLAGS_APP_NAME: 'cluster-under-test',
    LOG_LEVEL: 'info',
    ...extra,
  });
  return proxy;
}

async function bothWorkersReady(port: number): Promise<void> {
  try {
    await waitFor(async () => {
      try {
        return (await healthWorkers(port, 6)).size === 2;
      } catch {
        return false;
      }
    }, 30_000);
  } catch (error) {
    // Say what the cluster printed, so a failure on a loaded CI machine can be read.
    throw new Error(
      `both workers did not answer health in 30 s; the cluster printed:\n${proxy?.output() ?? ''}`,
      {
        cause: error,
      },
    );
  }
}

test.each([
  ['0', 'FLAGS_WORKERS="0": must be a positive whole number of worker processes, or auto'],
  ['two', 'FLAGS_WORKERS="two": must be a positive whole number of worker processes, or auto'],
  ['1.5', 'FLAGS_WORKERS="1.5"'],
])('FLAGS_WORKERS=%s stops start-up naming the variable', async (value, message) => {
  const { exited } = run({
    FLAGS_URL: upstream.url,
    FLAGS_API_TOKEN: 't',
    FLAGS_PROXY_CLIENT_KEYS: 'k',
    FLAGS_WORKERS: value,
  });
  const { code, stderr } = await exited;
  expect(code).toBe(1);
  expect(stderr).toContain(message);
});

test('an unparseable FLAGS_REDIS_URL stops start-up naming the variable, never the password', async () => {
  const { exited } = run({
    FLAGS_URL: upstream.url,
    FLAGS_API_TOKEN: 't',
    FLAGS_PROXY_CLIENT_KEYS: 'k',
    FLAGS_WORKERS: '2',
    FLAGS_REDIS_URL: 'redis://:hunter2@cache:notaport',
  });
  const { code, stderr, stdout } = await exited;
  expect(code).toBe(1);
  expect(stderr).toContain('Invalid FLAGS_REDIS_URL: must be a redis:// or rediss:// URL');
  expect(stderr + stdout).not.toContain('hunter2');
  expect(stdout).not.toContain('worker 1 started');
});

test('two workers share the port and both answer; Prometheus aggregates them; a killed worker is replaced', async () => {
  const running = startCluster();
  const port = await childPort(running.child, running.output);
  await bothWorkersReady(port);

  const metrics = await get(port, '/proxy/internal-backstage/prometheus');
  expect(metrics.status).toBe(200);
  expect(metrics.body).toMatch(/^flags_proxy_workers 2$/m);
  expect(metrics.body).toMatch(/^flags_proxy_ready 1$/m);
  expect(metrics.body).toMatch(/^flags_proxy_toggles \d+$/m);
  expect(metrics.body).not.toMatch(/pid/i);

  const before = pidsOfWorkers(running.output());
  const victim = before.get('1');
  expect(victim).toBeDefined();
  process.kill(victim as number, 'SIGKILL');
  // A connection handed to the worker in the instant it died is lost (as with any crashed server);
  // once the primary has seen the death, every request is answered while the replacement starts.
  await waitFor(
    () => /worker 1 exited \(signal SIGKILL\); starting a new one/.test(running.output()),
    10_000,
  );
  for (let i = 0; i < 10; i++) expect((await get(port, '/proxy/health')).status).toBe(200);
  await waitFor(() => pidsOfWorkers(running.output()).has('3'), 20_000);
  await waitFor(async () => (await healthWorkers(port, 6)).has('3'), 20_000);
  const after = await get(port, '/proxy/internal-backstage/prometheus');
  expect(after.body).toMatch(/^flags_proxy_worker_restarts_total 1$/m);
});

interface MetricsBody {
  appName: string;
  instanceId: string;
  bucket: { toggles: Record<string, { yes: number; no: number }> };
}

const yesOf = (posted: CapturedRequest[], app: string, toggle: string) =>
  posted
    .map((r) => r.body as MetricsBody)
    .filter((b) => b.appName === app)
    .reduce((sum, b) => sum + (b.bucket.toggles[toggle]?.yes ?? 0), 0);

test('SIGTERM to the primary flushes the pending usage of every worker upstream, then exits 0', async () => {
  const running = startCluster();
  const port = await childPort(running.child, running.output);
  await bothWorkersReady(port);

  const evaluations = 20;
  for (let i = 0; i < evaluations; i++) {
    expect((await get(port, `/proxy?userId=user-${i}`)).status).toBe(200);
  }
  const relayed = 10;
  const payload = JSON.stringify({
    appName: 'browser-app',
    instanceId: 'browser-1',
    bucket: {
      start: new Date(Date.now() - 1000).toISOString(),
      stop: new Date().toISOString(),
      toggles: { 'always-on': { yes: 1, no: 0 } },
    },
  });
  for (let i = 0; i < relayed; i++) {
    expect((await get(port, '/proxy/client/metrics', 'POST', payload)).status).toBe(202);
  }
  expect(upstream.posted('/api/client/metrics')).toHaveLength(0);

  running.child.kill('SIGTERM');
  const { code, stdout } = await running.exited;
  expect(code).toBe(0);
  expect(stdout).toContain('every worker has shut down');
  const posted = upstream.posted('/api/client/metrics');
  const proxyBuckets = posted
    .map((r) => r.body as MetricsBody)
    .filter((b) => b.appName === 'cluster-under-test');
  // One bucket per worker (each SDK has its own instance id), and no evaluation lost or doubled.
  expect(new Set(proxyBuckets.map((b) => b.instanceId)).size).toBe(2);
  expect(yesOf(posted, 'cluster-under-test', 'always-on')).toBe(evaluations);
  expect(yesOf(posted, 'browser-app', 'always-on')).toBe(relayed);
});
