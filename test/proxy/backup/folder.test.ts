import { spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sampleFeatures } from '../../support/fixtures';
import { childPort } from '../../support/listen';
import { waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

// Runs the built program as a user does (`npm run build` first).
const BIN = path.resolve(__dirname, '../../../dist/src/bin/flags-proxy.js');
const DEV_TOKEN = '*:development.backup-folder-dev-secret';
const PROD_TOKEN = '*:production.backup-folder-prod-secret';
const DEV_KEY = 'dev-key';
const PROD_KEY = 'prod-key';

jest.setTimeout(90_000);

interface Running {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * What one test runs against: its folder, its upstream and the programs it started. The tests run
 * concurrently (most of each is a program waiting for the SDK to give up on the stopped upstream: a
 * GET and two retries, 1 s and 2 s apart), so each has its own; they are released in afterAll.
 */
interface Setup {
  folder: string;
  upstream: TestUpstream;
  /** Kept: once stopped, the upstream's port refuses connections (an upstream that is down). */
  upstreamUrl: string;
  children: ChildProcess[];
}

const setups: Setup[] = [];

/**
 * Two tests at a time: starting the program is mostly CPU, which more tests at once on two cores
 * would only share out (and bring closer to their waits' bounds); two overlap one's start with the
 * other's wait for the upstream.
 */
const TESTS_AT_ONCE = 2;
let running = 0;
const queue: Array<() => void> = [];
function inTurn<A extends unknown[]>(body: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args) => {
    if (running >= TESTS_AT_ONCE) await new Promise<void>((resolve) => queue.push(resolve));
    else running += 1;
    try {
      await body(...args);
    } finally {
      const next = queue.shift();
      if (next) next();
      else running -= 1;
    }
  };
}

async function setup(): Promise<Setup> {
  const folder = path.join(mkdtempSync(path.join(tmpdir(), 'backup-folder-')), 'backups');
  const production = sampleFeatures();
  production.features = production.features.filter((f) => (f as { name: string }).name !== 'always-on');
  const upstream = await new TestUpstream(sampleFeatures(), DEV_TOKEN)
    .addToken(PROD_TOKEN, production)
    .start();
  const ctx = { folder, upstream, upstreamUrl: upstream.url, children: [] };
  setups.push(ctx);
  return ctx;
}

afterAll(async () => {
  for (const { folder, upstream, children } of setups.splice(0)) {
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
    await upstream.stop().catch(() => undefined);
    rmSync(path.dirname(folder), { recursive: true, force: true });
  }
});

async function launch(
  { folder, upstreamUrl, children }: Setup,
  extra: Record<string, string> = {},
): Promise<Running> {
  const child = spawn(process.execPath, [BIN], {
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'info',
      PORT: '0',
      FLAGS_URL: upstreamUrl,
      FLAGS_API_TOKEN: `${DEV_TOKEN},${PROD_TOKEN}`,
      FLAGS_PROXY_CLIENT_KEYS: `${DEV_KEY}@development,${PROD_KEY}@production`,
      FLAGS_FETCH_INTERVAL: '200',
      BACKUP_FOLDER: folder,
      ...extra,
    },
    stdio: 'pipe',
  });
  children.push(child);
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  // the port the kernel chose, once the child holds it
  const port = await childPort(child, () => output);
  return { child, url: `http://127.0.0.1:${port}`, output: () => output, exited };
}

async function status(url: string): Promise<number> {
  return fetch(url).then(
    (res) => res.status,
    () => 0,
  );
}

async function answer(running: Running, key: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`${running.url}/proxy?userId=alice&properties[plan]=pro`, {
    headers: { authorization: key },
  });
  return { status: res.status, body: await res.text() };
}

const files = ({ folder }: Setup) => readdirSync(folder).filter((name) => name.endsWith('.json'));

/** Runs against the live upstream until both environments' backups are written, then stops. */
async function firstRun(ctx: Setup): Promise<{ dev: string; prod: string }> {
  const running = await launch(ctx);
  await waitFor(async () => (await status(`${running.url}/proxy/health`)) === 200, 20_000);
  await waitFor(() => {
    try {
      return files(ctx).length === 2;
    } catch {
      return false;
    }
  }, 20_000);
  const dev = await answer(running, DEV_KEY);
  const prod = await answer(running, PROD_KEY);
  expect(dev.status).toBe(200);
  expect(dev.body).not.toEqual(prod.body);
  running.child.kill('SIGTERM');
  expect(await running.exited).toBe(0);
  return { dev: dev.body, prod: prod.body };
}

/** Started with the upstream down: waits until the proxy says what it did with the folder. */
async function secondRun(ctx: Setup, seen: RegExp, extra: Record<string, string> = {}): Promise<Running> {
  const running = await launch(ctx, extra);
  await waitFor(() => seen.test(running.output()), 30_000);
  return running;
}

describe('BACKUP_FOLDER', () => {
  test.concurrent(
    'a run against the upstream writes one file per environment; with the upstream down the next run is ready from them with the same answers',
    inTurn(async () => {
      const ctx = await setup();
      const { folder, upstream } = ctx;
      const first = await firstRun(ctx);
      const names = files(ctx);
      expect(names).toHaveLength(2);
      for (const name of names) {
        expect(name).toMatch(/^flags-proxy-definitions-[0-9a-f]{24}\.json$/);
        expect(statSync(path.join(folder, name)).mode & 0o777).toBe(0o600);
        const text = readFileSync(path.join(folder, name), 'utf8');
        expect(text).not.toContain('secret');
      }
      expect(readdirSync(folder).filter((n) => n.endsWith('.tmp'))).toEqual([]);

      await upstream.stop();
      const running = await secondRun(ctx, /ready from the backup folder[\s\S]*ready from the backup folder/);
      expect(await status(`${running.url}/proxy/health`)).toBe(200);
      expect((await answer(running, DEV_KEY)).body).toEqual(first.dev);
      expect((await answer(running, PROD_KEY)).body).toEqual(first.prod);
      expect(running.output()).not.toContain('backup-folder-dev-secret');
    }),
  );

  type Change = (record: Record<string, unknown>) => Record<string, unknown> | string;
  test.concurrent.each<[string, Change, RegExp]>([
    [
      'tampered with (definitions changed, digest kept)',
      (record: Record<string, unknown>) => {
        const definitions = record.definitions as { features: { enabled: boolean }[] };
        definitions.features[0].enabled = !definitions.features[0].enabled;
        return record;
      },
      /backup folder: ignoring .*: digest does not match the record/,
    ],
    [
      'dated in the future',
      (record: Record<string, unknown>) => ({ ...record, fetchedAt: Date.now() + 86_400_000 }),
      /backup folder: ignoring .*: its fetchedAt \(.*\) is in the future/,
    ],
    [
      'dated before 2000',
      (record: Record<string, unknown>) => ({ ...record, fetchedAt: Date.UTC(1999, 0, 1) }),
      /backup folder: ignoring .*: its fetchedAt is before 2000/,
    ],
    ['not JSON', () => '{"format":1,', /backup folder: ignoring .*: not JSON/],
  ])(
    'a file %s is refused as the Redis backup refuses it: no readiness from it',
    inTurn(async (_what: string, change: Change, refusal: RegExp) => {
      const ctx = await setup();
      const { folder, upstream } = ctx;
      await firstRun(ctx);
      for (const name of files(ctx)) {
        const file = path.join(folder, name);
        const record = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
        const changed = change(record);
        writeFileSync(file, typeof changed === 'string' ? changed : JSON.stringify(changed));
      }
      await upstream.stop();
      const running = await secondRun(ctx, refusal);
      expect(await status(`${running.url}/proxy/health`)).toBe(503);
      expect((await answer(running, DEV_KEY)).status).toBe(503);
      expect(running.output()).not.toContain('ready from the backup folder');
    }),
  );

  test.concurrent.each<[string, (folder: string) => string, RegExp]>([
    [
      'writable by anyone (0777)',
      (folder) => {
        mkdirSync(folder);
        chmodSync(folder, 0o777);
        return folder;
      },
      /others than its owner can write to it \(mode 0777\); make it writable by its owner only \(chmod go-w\)/,
    ],
    [
      'writable by its group (0770)',
      (folder) => {
        mkdirSync(folder);
        chmodSync(folder, 0o770);
        return folder;
      },
      /others than its owner can write to it \(mode 0770\)/,
    ],
    [
      'owned by another user (uid 65534), mode 0700',
      (folder) => {
        mkdirSync(folder, { mode: 0o700 });
        chownSync(folder, 65534, 65534);
        return folder;
      },
      new RegExp(
        `it is owned by uid 65534, neither this process's user \\(uid ${process.getuid?.() ?? 0}\\) nor root`,
      ),
    ],
    [
      'a regular file',
      (folder) => {
        writeFileSync(folder, '');
        return folder;
      },
      /it is a regular file, not a directory/,
    ],
    [
      'below a regular file (it cannot be created)',
      (folder) => {
        writeFileSync(folder, '');
        return path.join(folder, 'backups');
      },
      /it cannot be created or read \(ENOTDIR\)/,
    ],
  ])(
    'a BACKUP_FOLDER %s stops start-up naming the variable and the problem',
    inTurn(async (_what: string, make: (folder: string) => string, problem: RegExp) => {
      const ctx = await setup();
      const folder = make(ctx.folder);
      const child = spawn(process.execPath, [BIN], {
        env: {
          PATH: process.env.PATH ?? '',
          PORT: '0',
          FLAGS_URL: ctx.upstreamUrl,
          FLAGS_API_TOKEN: DEV_TOKEN,
          FLAGS_PROXY_CLIENT_KEYS: DEV_KEY,
          BACKUP_FOLDER: folder,
        },
        stdio: 'pipe',
      });
      ctx.children.push(child);
      let output = '';
      child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code).toBe(1);
      expect(output).toContain(`cannot start: BACKUP_FOLDER ${JSON.stringify(folder)}: `);
      expect(output).toMatch(problem);
      expect(ctx.upstream.requests).toEqual([]);
    }),
  );

  test.concurrent(
    'links planted where the backups are written are replaced, never written through, and never read',
    inTurn(async () => {
      const ctx = await setup();
      const { folder, upstream } = ctx;
      await firstRun(ctx);
      const victims = path.join(path.dirname(folder), 'victims');
      mkdirSync(victims);
      const plant = () => {
        for (const name of files(ctx)) {
          const file = path.join(folder, name);
          const victim = path.join(victims, name);
          // the link's target holds a valid record: following the link would serve it
          if (lstatSync(file).isFile()) copyFileSync(file, victim);
          rmSync(file);
          symlinkSync(victim, file);
        }
      };
      plant();
      const before = Object.fromEntries(
        files(ctx).map((n) => [n, readFileSync(path.join(victims, n), 'utf8')]),
      );

      // against the live upstream: the backups are written as files of their own, the targets untouched
      const writer = await launch(ctx);
      await waitFor(() => files(ctx).every((name) => lstatSync(path.join(folder, name)).isFile()), 20_000);
      writer.child.kill('SIGTERM');
      expect(await writer.exited).toBe(0);
      for (const [name, text] of Object.entries(before)) {
        expect(readFileSync(path.join(victims, name), 'utf8')).toBe(text);
      }
      expect(readdirSync(folder).filter((n) => n.endsWith('.tmp'))).toEqual([]);

      // with the upstream down, links planted again are refused: no readiness from what they point at
      plant();
      await upstream.stop();
      const running = await secondRun(
        ctx,
        /it is a symbolic link, which is never followed here[\s\S]*it is a symbolic link/,
      );
      expect(await status(`${running.url}/proxy/health`)).toBe(503);
      expect((await answer(running, DEV_KEY)).status).toBe(503);
      expect(running.output()).not.toContain('ready from the backup folder');
    }),
  );

  test.concurrent(
    "production's record copied over development's file is ignored and named once; production is still served from its own",
    inTurn(async () => {
      const ctx = await setup();
      const { folder, upstream } = ctx;
      const first = await firstRun(ctx);
      const byEnvironment = new Map<string, string>();
      for (const name of files(ctx)) {
        const text = readFileSync(path.join(folder, name), 'utf8');
        const record = JSON.parse(text) as { scope: { environment: string } };
        byEnvironment.set(record.scope.environment, name);
      }
      const devFile = path.join(folder, byEnvironment.get('development') ?? '');
      const prodFile = path.join(folder, byEnvironment.get('production') ?? '');
      copyFileSync(prodFile, devFile);
      await upstream.stop();
      const running = await secondRun(ctx, /ready from the backup folder/);
      await waitFor(() => /holds the definitions of/.test(running.output()), 20_000);
      expect((await answer(running, PROD_KEY)).body).toEqual(first.prod);
      expect((await answer(running, DEV_KEY)).status).toBe(503);
      // read again after 1 s and 2 s: still one line
      await new Promise((resolve) => setTimeout(resolve, 3_500));
      const named = running
        .output()
        .split('\n')
        .filter((line) => line.includes('holds the definitions of'));
      expect(named).toHaveLength(1);
      expect(named[0]).toContain(
        `backup folder: ignoring ${devFile}: it holds the definitions of environment "production", projects *, not this backup's environment "development", projects *`,
      );
    }),
  );

  test.concurrent(
    'a file above FLAGS_MAX_STORED_DEFINITIONS_BYTES is not read into memory',
    inTurn(async () => {
      const ctx = await setup();
      const { folder, upstream } = ctx;
      await firstRun(ctx);
      const name = files(ctx)[0];
      const size = statSync(path.join(folder, name)).size;
      await upstream.stop();
      const limit = String(size - 1);
      const running = await secondRun(
        ctx,
        new RegExp(
          `backup folder: ignoring .*: it is ${size} bytes, above maxStoredDefinitionsBytes .* = ${limit}`,
        ),
        { FLAGS_MAX_STORED_DEFINITIONS_BYTES: limit },
      );
      expect(running.child.exitCode).toBeNull();
    }),
  );
});
