import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { sampleFeatures } from '../../support/fixtures';
import { childPort, listeningPortsOf } from '../../support/listen';
import { waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

// Runs the built program exactly as `npm start` does; `npm test` builds first (pretest).
const BIN = path.resolve(__dirname, '../../../dist/src/bin/flags-proxy.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(env: Record<string, string>) {
  const child = spawn(process.execPath, [BIN], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: 'pipe',
  });
  const result: Run = { code: null, stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => (result.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (result.stderr += d.toString()));
  const exited = new Promise<Run>((resolve) => child.on('exit', (code) => resolve({ ...result, code })));
  return { child, exited };
}

beforeAll(() => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm test does it first)`);
});

test('exits 1 naming every missing required option and its variable on one line', async () => {
  const { exited } = run({});
  const { code, stderr } = await exited;
  expect(code).toBe(1);
  expect(stderr.trim().split('\n')).toEqual([
    'flags-proxy: cannot start: Missing required configuration: flagsUrl: FLAGS_URL (or UNLEASH_URL or UPSTREAM_URL), flagsApiToken: FLAGS_API_TOKEN (or UNLEASH_API_TOKEN or TOKENS), clientKeys: FLAGS_PROXY_CLIENT_KEYS (or UNLEASH_PROXY_CLIENT_KEYS or PRETRUSTED_TOKENS)',
  ]);
});

test('exits 1 naming a variable whose value does not parse', async () => {
  const { exited } = run({
    FLAGS_URL: 'http://127.0.0.1:1/api',
    FLAGS_API_TOKEN: 't',
    FLAGS_PROXY_CLIENT_KEYS: 'k',
    FLAGS_FETCH_INTERVAL: 'soon',
  });
  const { code, stderr } = await exited;
  expect(code).toBe(1);
  expect(stderr).toContain('FLAGS_FETCH_INTERVAL="soon": must be a whole non-negative number');
});

test('exits 1 without the value when a client key is also a server-side SDK token', async () => {
  const shared = 'doubled-secret-7d1e';
  const { exited } = run({
    FLAGS_URL: 'http://127.0.0.1:1/api',
    FLAGS_API_TOKEN: 't',
    FLAGS_PROXY_CLIENT_KEYS: `public-key,${shared}`,
    EXP_SERVER_SIDE_SDK_CONFIG_TOKENS: shared,
    PORT: '0',
  });
  const { code, stdout, stderr } = await exited;
  expect(code).toBe(1);
  expect(stderr).toContain('flags-proxy: cannot start: A value of clientKeys (FLAGS_PROXY_CLIENT_KEYS)');
  expect(stderr).toContain('EXP_SERVER_SIDE_SDK_CONFIG_TOKENS');
  expect(stdout + stderr).not.toContain(shared);
});

test('PORT=0 takes a port the kernel chooses, and the start-up line names it', async () => {
  const upstream = await new TestUpstream(sampleFeatures()).start();
  const { child, exited } = run({
    FLAGS_URL: upstream.url,
    FLAGS_API_TOKEN: upstream.token,
    FLAGS_PROXY_CLIENT_KEYS: 'key-a',
    PORT: '0',
    LOG_LEVEL: 'info',
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  try {
    const port = await childPort(child, () => output);
    expect(port).toBeGreaterThan(0);
    await waitFor(() => output.includes('listening on'), 15_000);
    expect(output).toMatch(
      new RegExp(
        `listening on port ${port} on every interface \\(::\\), base path "" \\(endpoints under /proxy`,
      ),
    );
    // the port named is the one serving
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/proxy/health`)).status === 200, 15_000);
  } finally {
    child.kill('SIGKILL');
    await exited;
    await upstream.stop();
  }
});

test('serves on PORT from environment variables and flushes usage metrics on SIGTERM', async () => {
  const upstream = await new TestUpstream(sampleFeatures()).start();
  const port = await freePort();
  const { child, exited } = run({
    FLAGS_URL: upstream.url,
    FLAGS_API_TOKEN: upstream.token,
    FLAGS_PROXY_CLIENT_KEYS: 'key-a,key-b',
    PORT: String(port),
    FLAGS_METRICS_INTERVAL: '600000',
    FLAGS_APP_NAME: 'proxy-under-test',
  });
  try {
    let body: { toggles: Array<{ name: string }> } | undefined;
    await waitFor(async () => {
      // only the program's own answers: another test's server may hold a port picked beforehand
      if (child.pid === undefined || !listeningPortsOf(child.pid).includes(port)) return false;
      try {
        const res = await fetch(`http://127.0.0.1:${port}/proxy?userId=alice`, {
          headers: { Authorization: 'key-b' },
        });
        if (res.status !== 200) return false;
        body = (await res.json()) as { toggles: Array<{ name: string }> };
        return true;
      } catch {
        return false;
      }
    }, 15_000);
    expect(body?.toggles.map((t) => t.name)).toContain('for-alice');
    child.kill('SIGTERM');
    const { code } = await exited;
    expect(code).toBe(0);
    const metrics = upstream.posted('/api/client/metrics');
    expect(metrics.length).toBeGreaterThanOrEqual(1);
    const bucket = metrics.at(-1)?.body as {
      appName: string;
      bucket: { toggles: Record<string, { yes: number }> };
    };
    expect(bucket.appName).toBe('proxy-under-test');
    expect(bucket.bucket.toggles['for-alice'].yes).toBe(1);
  } finally {
    child.kill('SIGKILL');
    await exited;
    await upstream.stop();
  }
});

test("starts with only the reference Unleash proxy's environment and serves /proxy and /api/frontend", async () => {
  const upstream = await new TestUpstream(sampleFeatures()).start();
  const port = await freePort();
  // Exactly what a container of the reference proxy is given; no FLAGS_* variable at all.
  const { child, exited } = run({
    UNLEASH_URL: upstream.url,
    UNLEASH_API_TOKEN: upstream.token,
    UNLEASH_PROXY_CLIENT_KEYS: 'ref-key-a,ref-key-b',
    UNLEASH_APP_NAME: 'reference-app',
    UNLEASH_METRICS_INTERVAL: '600000',
    PORT: String(port),
    LOG_LEVEL: 'info',
  });
  try {
    let body: { toggles: Array<{ name: string }> } | undefined;
    await waitFor(async () => {
      // only the program's own answers: another test's server may hold a port picked beforehand
      if (child.pid === undefined || !listeningPortsOf(child.pid).includes(port)) return false;
      try {
        const res = await fetch(`http://127.0.0.1:${port}/proxy?userId=alice`, {
          headers: { Authorization: 'ref-key-b' },
        });
        if (res.status !== 200) return false;
        body = (await res.json()) as { toggles: Array<{ name: string }> };
        return true;
      } catch {
        return false;
      }
    }, 15_000);
    expect(body?.toggles.map((t) => t.name)).toContain('for-alice');
    const frontend = await fetch(`http://127.0.0.1:${port}/api/frontend?userId=alice`, {
      headers: { Authorization: 'ref-key-a' },
    });
    expect(frontend.status).toBe(200);
    expect(await frontend.json()).toEqual(body);
    const refused = await fetch(`http://127.0.0.1:${port}/proxy`, { headers: { Authorization: 'nope' } });
    expect(refused.status).toBe(401);
    // Registered upstream under the reference variable's app name.
    expect(upstream.featureRequests()[0].headers['unleash-appname']).toBe('reference-app');

    child.kill('SIGTERM');
    const { code, stdout, stderr } = await exited;
    expect(code).toBe(0);
    const aliasLines = `${stdout}${stderr}`.split('\n').filter((l) => l.includes('reference Unleash proxy'));
    expect(aliasLines).toHaveLength(1);
    expect(aliasLines[0]).toContain(
      'UNLEASH_URL, UNLEASH_API_TOKEN, UNLEASH_PROXY_CLIENT_KEYS, UNLEASH_APP_NAME, UNLEASH_METRICS_INTERVAL',
    );
    expect(aliasLines[0]).not.toContain('ref-key');
  } finally {
    child.kill('SIGKILL');
    await exited;
    await upstream.stop();
  }
});

describe("client keys: required under the specification's names, optional under Unleash Edge's", () => {
  const UNLEASH_TOKEN = '*:development.upstream-dev-secret';
  const FRONTEND_TOKEN = '*:development.frontend-dev-secret';

  test.each([
    ['FLAGS_URL + FLAGS_API_TOKEN', { FLAGS_URL: 'http://127.0.0.1:1/api', FLAGS_API_TOKEN: UNLEASH_TOKEN }],
    [
      'UNLEASH_URL + UNLEASH_API_TOKEN',
      { UNLEASH_URL: 'http://127.0.0.1:1/api', UNLEASH_API_TOKEN: UNLEASH_TOKEN },
    ],
  ])(
    'an Unleash-format token under %s without client keys exits 1 naming FLAGS_PROXY_CLIENT_KEYS on one line',
    async (_names, env) => {
      const { exited } = run({ ...env, PORT: '0' });
      const { code, stdout, stderr } = await exited;
      expect(code).toBe(1);
      expect(stderr.trim().split('\n')).toEqual([
        'flags-proxy: cannot start: Missing required configuration: clientKeys: FLAGS_PROXY_CLIENT_KEYS (or UNLEASH_PROXY_CLIENT_KEYS or PRETRUSTED_TOKENS)',
      ]);
      expect(stdout + stderr).not.toContain('upstream-dev-secret');
    },
  );

  test('UPSTREAM_URL + TOKENS without client keys runs and serves a frontend token the upstream confirms', async () => {
    const upstream = await new TestUpstream(sampleFeatures(), UNLEASH_TOKEN).start();
    upstream.knownTokens.set(FRONTEND_TOKEN, {
      type: 'frontend',
      environment: 'development',
      projects: ['*'],
    });
    const port = await freePort();
    const { child, exited } = run({
      UPSTREAM_URL: upstream.url,
      TOKENS: UNLEASH_TOKEN,
      PORT: String(port),
      FLAGS_METRICS_INTERVAL: '600000',
    });
    try {
      let body: { toggles: Array<{ name: string }> } | undefined;
      await waitFor(async () => {
        // only the program's own answers: another test's server may hold a port picked beforehand
        if (child.pid === undefined || !listeningPortsOf(child.pid).includes(port)) return false;
        try {
          const res = await fetch(`http://127.0.0.1:${port}/api/frontend?userId=alice`, {
            headers: { Authorization: FRONTEND_TOKEN },
          });
          if (res.status !== 200) return false;
          body = (await res.json()) as { toggles: Array<{ name: string }> };
          return true;
        } catch {
          return false;
        }
      }, 15_000);
      expect(body?.toggles.map((t) => t.name)).toContain('for-alice');
      expect(upstream.validationCalls()).toEqual([[FRONTEND_TOKEN]]);
      const unknown = await fetch(`http://127.0.0.1:${port}/api/frontend`, {
        headers: { Authorization: 'some-key' },
      });
      expect(unknown.status).toBe(401);
      child.kill('SIGTERM');
      expect((await exited).code).toBe(0);
    } finally {
      child.kill('SIGKILL');
      await exited;
      await upstream.stop();
    }
  });
});

test('on SIGTERM the change streams of every environment are ended and the process exits without waiting out the grace period', async () => {
  const dev = '*:development.upstream-dev-secret';
  const prod = '*:production.upstream-prod-secret';
  const upstream = await new TestUpstream(sampleFeatures(), dev).start();
  upstream.addToken(prod, sampleFeatures());
  const port = await freePort();
  const { child, exited } = run({
    FLAGS_URL: upstream.url,
    FLAGS_API_TOKEN: `${dev},${prod}`,
    FLAGS_PROXY_CLIENT_KEYS: 'dev-key@development,prod-key@production',
    PORT: String(port),
    FLAGS_METRICS_INTERVAL: '600000',
  });
  try {
    await waitFor(async () => {
      // only the program's own answers: another test's server may hold a port picked beforehand
      if (child.pid === undefined || !listeningPortsOf(child.pid).includes(port)) return false;
      try {
        const res = await fetch(`http://127.0.0.1:${port}/proxy`, { headers: { Authorization: 'prod-key' } });
        return res.status === 200;
      } catch {
        return false;
      }
    }, 15_000);
    // a stream of the second environment (the first's were always ended)
    const stream = await fetch(`http://127.0.0.1:${port}/ofrep/v1/flag-changes`, {
      headers: { Authorization: 'prod-key' },
    });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    let received = '';
    const ended = (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return 'ended by the server';
        received += Buffer.from(value).toString('utf8');
      }
    })().catch((err: unknown) => `cut: ${String(err)}`);
    await waitFor(() => received.includes(': connected'));
    child.kill('SIGTERM');
    // the grace period is 10 s: a stream left open would hold the process that long
    let timer: NodeJS.Timeout | undefined;
    const within = (ms: number) =>
      new Promise<'still running'>((r) => (timer = setTimeout(() => r('still running'), ms)));
    const outcome = await Promise.race([exited.then((r) => r.code), within(6_000)]);
    clearTimeout(timer);
    expect(outcome).toBe(0);
    expect(await ended).toBe('ended by the server');
  } finally {
    child.kill('SIGKILL');
    await exited;
    await upstream.stop();
  }
}, 30_000);

/**
 * A port free right now on loopback, for the tests that give the program its port (PORT is read);
 * an answer counts once the program holds it (`listeningPortsOf`).
 */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test.each([
  [
    'FEATURES_REFRESH_INTERVAL_SECONDS',
    {
      UPSTREAM_URL: 'http://127.0.0.1:1',
      TOKENS: '*:development.abc',
      FEATURES_REFRESH_INTERVAL_SECONDS: '2592000',
    },
    'flags-proxy: cannot start: Invalid FEATURES_REFRESH_INTERVAL_SECONDS="2592000": must be at most 86400 s (1 day)',
  ],
  [
    'FLAGS_FETCH_INTERVAL',
    {
      FLAGS_URL: 'http://127.0.0.1:1/api',
      FLAGS_API_TOKEN: 't',
      FLAGS_PROXY_CLIENT_KEYS: 'k',
      FLAGS_FETCH_INTERVAL: '2592000000',
    },
    'flags-proxy: cannot start: Invalid FLAGS_FETCH_INTERVAL="2592000000": must be at most 86400000 ms (1 day)',
  ],
  [
    'RELOAD_INTERVAL',
    { BOOTSTRAP_FILE: '/nonexistent/features.json', FRONTEND_TOKENS: 'f', RELOAD_INTERVAL: '2147484' },
    'flags-proxy: cannot start: Invalid RELOAD_INTERVAL="2147484": must be at most 86400 s (1 day)',
  ],
])('%s past its maximum stops start-up with one line naming it and the bound', async (_name, env, line) => {
  const { exited } = run({ ...env, PORT: '0' });
  const { code, stdout, stderr } = await exited;
  expect(code).toBe(1);
  expect(stdout).not.toContain('listening');
  expect(stderr.trim().split('\n')).toEqual([line]);
});

test("at the maxima of Edge's intervals the program polls once and warns of no timer overflow", async () => {
  const upstream = await new TestUpstream(sampleFeatures()).start();
  const { child, exited } = run({
    FLAGS_URL: upstream.url,
    FLAGS_API_TOKEN: upstream.token,
    FLAGS_PROXY_CLIENT_KEYS: 'key-a',
    PORT: '0',
    FEATURES_REFRESH_INTERVAL_SECONDS: '86400',
    METRICS_INTERVAL_SECONDS: '86400',
    TOKEN_REVALIDATION_INTERVAL_SECONDS: '86400',
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  try {
    const port = await childPort(child, () => output);
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/proxy/health`)).status === 200, 15_000);
    for (let i = 0; i < 20; i += 1) {
      expect((await fetch(`${base}/proxy`, { headers: { authorization: 'key-a' } })).status).toBe(200);
    }
    // a delay a timer cannot hold would have polled every millisecond by now
    expect(upstream.featureRequests()).toHaveLength(1);
    expect(output).not.toContain('TimeoutOverflowWarning');
  } finally {
    child.kill('SIGKILL');
    await exited;
    await upstream.stop();
  }
});
