import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { InMemoryStorageProvider, UnleashClient } from 'unleash-proxy-client';
import { sampleFeatures } from '../../support/fixtures';
import { childPort } from '../../support/listen';
import { waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

// Runs the built program as a user does (`npm run build` first).
const BIN = path.resolve(__dirname, '../../../dist/src/bin/flags-proxy.js');
const FRONTEND = 'offline-frontend-key';
const BACKEND = 'offline-backend-token';

jest.setTimeout(60_000);

interface Running {
  child: ChildProcess;
  /** The proxy's origin, known once it listens (`started`). */
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

const children: ChildProcess[] = [];
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'offline-mode-'));
});

afterEach(async () => {
  await Promise.all(
    children.splice(0).map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
  rmSync(dir, { recursive: true, force: true });
});

/** Writes a file in one step (write beside it, rename), as an editor or a deploy does. */
function writeDefinitions(file: string, content: unknown): void {
  const text = typeof content === 'string' ? content : JSON.stringify(content);
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
}

/** Spawned on a port the kernel chooses (PORT=0): no other test's server can hold it first. */
function launch(env: Record<string, string>, args: string[] = []): Running {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', PORT: '0', ...env },
    stdio: 'pipe',
  });
  children.push(child);
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, url: '', output: () => output, exited };
}

/** Started and listening on the port it holds (PORT=0), then the first answer of any kind. */
async function started(env: Record<string, string>, args: string[] = []): Promise<Running> {
  const running = launch(env, args);
  running.url = `http://127.0.0.1:${await childPort(running.child, running.output)}`;
  await waitFor(
    async () =>
      fetch(`${running.url}/proxy/health`).then(
        () => true,
        () => false,
      ),
    20_000,
  );
  return running;
}

type Toggle = { name: string; enabled: boolean; variant: { name: string; enabled: boolean } };

async function frontend(
  url: string,
  key: string,
  query = '',
): Promise<{ status: number; toggles: Toggle[] }> {
  const res = await fetch(`${url}/api/frontend${query}`, { headers: { authorization: key } });
  const body = res.status === 200 ? ((await res.json()) as { toggles: Toggle[] }) : { toggles: [] };
  return { status: res.status, toggles: body.toggles };
}

const names = (toggles: Toggle[]) => toggles.map((t) => t.name);

function clientFile(): { file: string; definitions: ReturnType<typeof sampleFeatures> } {
  const definitions = sampleFeatures();
  definitions.features.push({
    name: 'other-project-toggle',
    enabled: true,
    project: 'other',
    strategies: [{ name: 'default' }],
  });
  const file = path.join(dir, 'features.json');
  writeDefinitions(file, definitions);
  return { file, definitions };
}

describe('offline mode from the environment alone (BOOTSTRAP_FILE without an upstream URL)', () => {
  test('a client-API file is served at once to a frontend token on /api/frontend, /proxy and OFREP', async () => {
    const { file, definitions } = clientFile();
    const { url, output } = await started({ BOOTSTRAP_FILE: file, FRONTEND_TOKENS: FRONTEND });
    expect((await fetch(`${url}/proxy/health`)).status).toBe(200);

    const alice = await frontend(url, FRONTEND, '?userId=alice');
    expect(alice.status).toBe(200);
    expect(names(alice.toggles)).toEqual(
      expect.arrayContaining(['always-on', 'for-alice', 'with-variants', 'other-project-toggle']),
    );
    expect(names(alice.toggles)).not.toContain('switched-off');
    const bob = await frontend(url, FRONTEND, '?userId=carol');
    expect(names(bob.toggles)).not.toContain('for-alice');

    const proxy = await fetch(`${url}/proxy?userId=alice`, { headers: { authorization: FRONTEND } });
    expect(proxy.status).toBe(200);
    expect(names(((await proxy.json()) as { toggles: Toggle[] }).toggles)).toEqual(names(alice.toggles));

    const single = await fetch(`${url}/ofrep/v1/evaluate/flags/for-alice`, {
      method: 'POST',
      headers: { authorization: FRONTEND, 'content-type': 'application/json' },
      body: JSON.stringify({ context: { targetingKey: 'alice' } }),
    });
    expect(single.status).toBe(200);
    expect(await single.json()).toMatchObject({ key: 'for-alice', value: true });
    const off = await fetch(`${url}/ofrep/v1/evaluate/flags/switched-off`, {
      method: 'POST',
      headers: { authorization: FRONTEND, 'content-type': 'application/json' },
      body: JSON.stringify({ context: {} }),
    });
    expect(await off.json()).toMatchObject({ key: 'switched-off', reason: 'DISABLED' });
    expect(output()).toContain(`Offline mode: serving ${definitions.features.length} toggles`);
    expect(output()).toContain('(client API format)');
    expect(output()).not.toContain(FRONTEND);
  });

  test("Edge's simple format is served as Edge defines it: enabled as given, the variant named, names as data", async () => {
    const file = path.join(dir, 'simple.json');
    writeDefinitions(file, {
      checkout: { enabled: true, variant: 'blue' },
      banner: { enabled: true },
      legacy: { enabled: false, variant: 'old' },
      constructor: { enabled: true },
    });
    const { url, output } = await started({ BOOTSTRAP_FILE: file, FRONTEND_TOKENS: FRONTEND });
    const answer = await frontend(url, FRONTEND, '?userId=someone');
    expect(answer.toggles).toEqual([
      { name: 'banner', enabled: true, impressionData: false, variant: { name: 'disabled', enabled: false } },
      { name: 'checkout', enabled: true, impressionData: false, variant: { name: 'blue', enabled: true } },
      {
        name: 'constructor',
        enabled: true,
        impressionData: false,
        variant: { name: 'disabled', enabled: false },
      },
    ]);
    const bulk = await fetch(`${url}/ofrep/v1/evaluate/flags`, {
      method: 'POST',
      headers: { authorization: FRONTEND, 'content-type': 'application/json' },
      body: JSON.stringify({ context: {} }),
    });
    const flags = ((await bulk.json()) as { flags: { key: string; value: unknown; variant?: string }[] })
      .flags;
    expect(flags.find((f) => f.key === 'checkout')).toMatchObject({ value: true, variant: 'blue' });
    expect(flags.find((f) => f.key === 'legacy')).toMatchObject({ reason: 'DISABLED' });
    expect(output()).toContain('(simple format)');
  });

  test('a made-up key is a 401 everywhere; client tokens read /api/client/features and nothing else', async () => {
    const { file, definitions } = clientFile();
    const { url } = await started({
      BOOTSTRAP_FILE: file,
      FRONTEND_TOKENS: FRONTEND,
      CLIENT_TOKENS: BACKEND,
    });
    for (const key of ['made-up', '*:development.made-up-secret', BACKEND]) {
      expect((await frontend(url, key)).status).toBe(401);
      const ofrep = await fetch(`${url}/ofrep/v1/evaluate/flags`, {
        method: 'POST',
        headers: { authorization: key, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(ofrep.status).toBe(401);
    }
    const features = await fetch(`${url}/api/client/features`, { headers: { authorization: BACKEND } });
    expect(features.status).toBe(200);
    const body = (await features.json()) as { features: { name: string }[] };
    expect(body.features.map((f) => f.name).sort()).toEqual(
      (definitions.features as { name: string }[]).map((f) => f.name).sort(),
    );
    for (const key of ['made-up', FRONTEND]) {
      const refused = await fetch(`${url}/api/client/features`, { headers: { authorization: key } });
      expect(refused.status).toBe(401);
    }
  });

  test("a token in Unleash's format sees its own project's toggles; `*:` sees every project", async () => {
    const { file } = clientFile();
    const projectToken = 'other:development.project-secret';
    const allToken = '*:production.all-secret';
    const { url } = await started({
      BOOTSTRAP_FILE: file,
      FRONTEND_TOKENS: `${projectToken},${allToken}`,
    });
    expect(names((await frontend(url, projectToken)).toggles)).toEqual(['other-project-toggle']);
    const all = names((await frontend(url, allToken)).toggles);
    expect(all).toEqual(expect.arrayContaining(['always-on', 'other-project-toggle']));
  });

  test('a file that cannot be served stops start-up naming it; no keys stops it naming the variables', async () => {
    const missing = launch({
      BOOTSTRAP_FILE: path.join(dir, 'absent.json'),
      FRONTEND_TOKENS: FRONTEND,
    });
    expect(await missing.exited).toBe(1);
    expect(missing.output()).toMatch(
      /cannot start: Offline mode: BOOTSTRAP_FILE .*absent\.json cannot be read \(ENOENT\)/,
    );

    const broken = path.join(dir, 'broken.json');
    writeDefinitions(broken, '{"features": 3}');
    const refused = launch({ BOOTSTRAP_FILE: broken, FRONTEND_TOKENS: FRONTEND });
    expect(await refused.exited).toBe(1);
    expect(refused.output()).toContain('cannot be served');

    const { file } = clientFile();
    const large = launch({
      BOOTSTRAP_FILE: file,
      FRONTEND_TOKENS: FRONTEND,
      FLAGS_MAX_STORED_DEFINITIONS_BYTES: '100',
    });
    expect(await large.exited).toBe(1);
    expect(large.output()).toMatch(
      /above maxStoredDefinitionsBytes \(FLAGS_MAX_STORED_DEFINITIONS_BYTES\) = 100/,
    );

    const keyless = launch({ BOOTSTRAP_FILE: file });
    expect(await keyless.exited).toBe(1);
    expect(keyless.output()).toContain('Offline mode needs keys: FRONTEND_TOKENS');
    expect(keyless.output()).not.toContain('FLAGS_URL');
  });

  test('no token reaches the log, however short, at debug level too', async () => {
    const { file } = clientFile();
    const running = await started({
      BOOTSTRAP_FILE: file,
      FRONTEND_TOKENS: 'k9x',
      CLIENT_TOKENS: 'q7z',
      LOG_LEVEL: 'debug',
    });
    expect((await frontend(running.url, 'k9x')).status).toBe(200);
    expect(running.output()).toContain('effective configuration');
    expect(running.output()).not.toMatch(/k9x|q7z/);
  });

  test('a toggle that would make evaluation throw is quarantined alone, as from an upstream', async () => {
    const definitions = sampleFeatures();
    definitions.features.push({
      name: 'overridden',
      enabled: true,
      strategies: [{ name: 'default' }],
      variants: [{ name: 'a', weight: 1000, stickiness: 'default', overrides: [null] }],
    });
    const file = path.join(dir, 'features.json');
    writeDefinitions(file, definitions);
    const { url, output } = await started({
      BOOTSTRAP_FILE: file,
      FRONTEND_TOKENS: FRONTEND,
      ENABLE_ALL_ENDPOINT: 'true',
    });
    const all = await fetch(`${url}/api/frontend/all`, { headers: { authorization: FRONTEND } });
    const toggles = ((await all.json()) as { toggles: Toggle[] }).toggles;
    expect(toggles.find((t) => t.name === 'overridden')).toMatchObject({ enabled: false });
    expect(toggles.find((t) => t.name === 'always-on')).toMatchObject({ enabled: true });
    expect(output()).toMatch(/quarantined: .*"overridden"/);
  });
});

describe('reloading the file (RELOAD_INTERVAL)', () => {
  test('a changed file is served at the next tick', async () => {
    const file = path.join(dir, 'simple.json');
    writeDefinitions(file, { first: { enabled: true } });
    const { url } = await started({ BOOTSTRAP_FILE: file, FRONTEND_TOKENS: FRONTEND, RELOAD_INTERVAL: '1' });
    expect(names((await frontend(url, FRONTEND)).toggles)).toEqual(['first']);
    writeDefinitions(file, { first: { enabled: false }, second: { enabled: true, variant: 'v' } });
    await waitFor(async () => names((await frontend(url, FRONTEND)).toggles).join() === 'second', 10_000);
    expect((await frontend(url, FRONTEND)).toggles[0].variant).toEqual({ name: 'v', enabled: true });
  });

  test('a broken or missing file keeps the last good definitions with one error line per change, never a crash', async () => {
    const file = path.join(dir, 'simple.json');
    writeDefinitions(file, { first: { enabled: true } });
    const running = await started({ BOOTSTRAP_FILE: file, FRONTEND_TOKENS: FRONTEND, RELOAD_INTERVAL: '1' });
    const errors = () =>
      running
        .output()
        .split('\n')
        .filter((line) => / ERROR /.test(line));

    writeDefinitions(file, '{"first": {"enabled": tru');
    await waitFor(() => errors().length === 1, 10_000);
    expect(errors()[0]).toMatch(
      /BOOTSTRAP_FILE .*simple\.json changed but cannot be served: it is not JSON; keeping the last good definitions/,
    );
    // more ticks of the same broken file: no more lines, the last good definitions served
    const ticks = running.output().length;
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(running.output().length).toBe(ticks);
    expect(names((await frontend(url(running), FRONTEND)).toggles)).toEqual(['first']);

    unlinkSync(file);
    await waitFor(() => errors().length === 2, 10_000);
    expect(errors()[1]).toContain('cannot be read (ENOENT)');
    expect(names((await frontend(url(running), FRONTEND)).toggles)).toEqual(['first']);

    writeDefinitions(file, { back: { enabled: true } });
    await waitFor(
      async () => names((await frontend(url(running), FRONTEND)).toggles).join() === 'back',
      10_000,
    );
    expect(running.child.exitCode).toBeNull();
    expect(errors()).toHaveLength(2);
  });
});

const url = (running: Running) => running.url;

/** Resident memory of a running child, in MiB (Linux). */
function residentMiB(child: ChildProcess): number {
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]);
  return kib / 1024;
}

describe('a BOOTSTRAP_FILE that is not a regular file', () => {
  test.each([
    ['a FIFO with no writer', (file: string) => execFileSync('mkfifo', [file]), 'a FIFO \\(named pipe\\)'],
    ['a link to /dev/zero', (file: string) => symlinkSync('/dev/zero', file), 'a character device'],
    ['a folder', (file: string) => mkdirSync(file), 'a directory'],
  ])('%s stops start-up at once, naming the variable and what the path is', async (_what, make, kind) => {
    const file = path.join(dir, 'features.json');
    make(file);
    const running = launch({ BOOTSTRAP_FILE: file, FRONTEND_TOKENS: FRONTEND });
    expect(await running.exited).toBe(1);
    expect(running.output()).toMatch(
      new RegExp(
        `cannot start: Offline mode: BOOTSTRAP_FILE .*features\\.json cannot be served: it is ${kind}, not a regular file`,
      ),
    );
  });

  test('a file that reads longer than its stated size (a /proc file) is cut at limit + 1 bytes and refused', async () => {
    const running = launch({
      BOOTSTRAP_FILE: '/proc/self/status',
      FRONTEND_TOKENS: FRONTEND,
      FLAGS_MAX_STORED_DEFINITIONS_BYTES: '100',
    });
    expect(await running.exited).toBe(1);
    expect(running.output()).toMatch(
      /BOOTSTRAP_FILE \/proc\/self\/status cannot be served: it reads as more than 100 bytes, above maxStoredDefinitionsBytes \(FLAGS_MAX_STORED_DEFINITIONS_BYTES\) = 100/,
    );
  });

  test('on reload a FIFO or /dev/zero is refused with one line per change, memory stays small, the last good definitions are served, SIGTERM is honoured', async () => {
    const file = path.join(dir, 'simple.json');
    writeDefinitions(file, { first: { enabled: true } });
    const running = await started({ BOOTSTRAP_FILE: file, FRONTEND_TOKENS: FRONTEND, RELOAD_INTERVAL: '1' });
    const errors = () =>
      running
        .output()
        .split('\n')
        .filter((line) => / ERROR /.test(line));

    const fifo = path.join(dir, 'pipe');
    execFileSync('mkfifo', [fifo]);
    renameSync(fifo, file);
    await waitFor(() => errors().length === 1, 10_000);
    expect(errors()[0]).toMatch(
      /BOOTSTRAP_FILE .*simple\.json changed but cannot be served: it is a FIFO \(named pipe\), not a regular file; keeping the last good definitions/,
    );
    // further ticks over the same FIFO: no more lines, and reloads are not stalled by it
    const ticks = running.output().length;
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(running.output().length).toBe(ticks);
    expect(names((await frontend(running.url, FRONTEND)).toggles)).toEqual(['first']);

    const link = path.join(dir, 'zero');
    symlinkSync('/dev/zero', link);
    renameSync(link, file);
    await waitFor(() => errors().length === 2, 10_000);
    expect(errors()[1]).toMatch(
      /it is a character device, not a regular file; keeping the last good definitions/,
    );
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(errors()).toHaveLength(2);
    expect(residentMiB(running.child)).toBeLessThan(400);
    expect(names((await frontend(running.url, FRONTEND)).toggles)).toEqual(['first']);

    // a FIFO in place again while SIGTERM arrives: the process stops as asked
    const again = path.join(dir, 'pipe-again');
    execFileSync('mkfifo', [again]);
    renameSync(again, file);
    await waitFor(() => errors().length === 3, 10_000);
    running.child.kill('SIGTERM');
    expect(await running.exited).toBe(0);
  });
});

describe('a frontend SDK against offline mode', () => {
  test('unleash-proxy-client configured for Edge reads the file and sees a reload', async () => {
    const file = path.join(dir, 'simple.json');
    writeDefinitions(file, { checkout: { enabled: true, variant: 'blue' }, banner: { enabled: false } });
    const running = await started({ BOOTSTRAP_FILE: file, FRONTEND_TOKENS: FRONTEND, RELOAD_INTERVAL: '1' });
    const client = new UnleashClient({
      url: `${running.url}/api/frontend`,
      clientKey: FRONTEND,
      appName: 'offline-web',
      refreshInterval: 1,
      disableMetrics: true,
      storageProvider: new InMemoryStorageProvider(),
      context: { userId: 'alice' },
    });
    // The SDK's own error events (an HTTP status it did not take), named in a failure
    const clientErrors: unknown[] = [];
    client.on('error', (error: unknown) => clientErrors.push(error));
    try {
      await client.start();
      expect(clientErrors).toEqual([]);
      expect(client.isEnabled('checkout')).toBe(true);
      expect(client.getVariant('checkout')).toMatchObject({ name: 'blue', enabled: true });
      expect(client.isEnabled('banner')).toBe(false);
      writeDefinitions(file, { checkout: { enabled: false }, banner: { enabled: true } });
      await waitFor(() => client.isEnabled('banner') && !client.isEnabled('checkout'), 15_000);
    } finally {
      client.stop();
    }
  });
});

describe('the `flags-proxy offline` command', () => {
  test("takes Edge's flags, ignores an upstream URL with a warning, and sends nothing upstream", async () => {
    const upstream = await new TestUpstream(sampleFeatures()).start();
    try {
      const { file } = clientFile();
      const running = await started({ FLAGS_URL: upstream.url, FLAGS_API_TOKEN: upstream.token }, [
        'offline',
        '--bootstrap-file',
        file,
        `--frontend-tokens=${FRONTEND}`,
        '--client-tokens',
        BACKEND,
      ]);
      expect(running.output()).toMatch(
        /Offline mode: ignoring FLAGS_URL \(the upstream URL\), FLAGS_API_TOKEN/,
      );
      expect((await frontend(running.url, FRONTEND, '?userId=alice')).status).toBe(200);
      const usage = await fetch(`${running.url}/api/frontend/client/metrics`, {
        method: 'POST',
        headers: { authorization: FRONTEND, 'content-type': 'application/json' },
        body: JSON.stringify({
          appName: 'web',
          instanceId: 'i1',
          bucket: {
            start: new Date().toISOString(),
            stop: new Date().toISOString(),
            toggles: { 'always-on': { yes: 3, no: 0 } },
          },
        }),
      });
      expect(usage.status).toBe(202);
      running.child.kill('SIGTERM');
      expect(await running.exited).toBe(0);
      expect(upstream.requests).toEqual([]);
    } finally {
      await upstream.stop();
    }
  });

  test('an unknown command or flag stops start-up with the usage line', async () => {
    const unknown = launch({}, ['serve']);
    expect(await unknown.exited).toBe(1);
    expect(unknown.output()).toContain(
      'Unknown command "serve": expected one of edge, offline, health, ready; usage: flags-proxy [edge|offline|health|ready]',
    );
    const flag = launch({}, ['offline', '--tokens', 'x']);
    expect(await flag.exited).toBe(1);
    expect(flag.output()).toContain('Unknown flag --tokens for offline; usage: flags-proxy');
  });
});
