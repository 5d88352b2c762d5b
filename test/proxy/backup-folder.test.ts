import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { digestOf } from '../../src/proxy/backup/backup-record';
import { sampleFeatures } from '../support/fixtures';
import { childPort } from '../support/listen';
import { waitFor } from '../support/proxy';
import { TestUpstream } from '../support/upstream';

// Runs the built program as a user does (`npm run build` first).
const BIN = path.resolve(__dirname, '../../dist/src/bin/flags-proxy.js');
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
      /backup folder: ignoring .*: digest does not match the definitions/,
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
        if (typeof changed !== 'string' && changed.fetchedAt !== record.fetchedAt) {
          // a consistent record but for its date: the digest still matches
          expect(changed.digest).toBe(digestOf(JSON.stringify(changed.definitions)));
        }
        writeFileSync(file, typeof changed === 'string' ? changed : JSON.stringify(changed));
      }
      await upstream.stop();
      const running = await secondRun(ctx, refusal);
      expect(await status(`${running.url}/proxy/health`)).toBe(503);
      expect((await answer(running, DEV_KEY)).status).toBe(503);
      expect(running.output()).not.toContain('ready from the backup folder');
    }),
  );

  test.concurrent(
    'a folder that cannot be written is a warning, never a crash: the proxy serves from the upstream',
    inTurn(async () => {
      const ctx = await setup();
      const { folder } = ctx;
      writeFileSync(path.dirname(folder) + '/not-a-folder', '');
      const running = await launch(ctx, {
        BACKUP_FOLDER: path.join(path.dirname(folder), 'not-a-folder', 'backups'),
      });
      await waitFor(
        () => /backup folder unavailable \(write\): .* cannot be written \(ENOTDIR\)/.test(running.output()),
        20_000,
      );
      expect((await answer(running, DEV_KEY)).status).toBe(200);
      expect(running.child.exitCode).toBeNull();
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
