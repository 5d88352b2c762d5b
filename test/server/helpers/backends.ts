import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { silentLogger } from '../../../src/common/logging/logger';
import { createFlagServer, type FlagServer, type FlagServerOptions } from '../../../src/server';

export const CLIENT_TOKEN = 'client-token-1';
export const ADMIN_TOKEN = 'admin-token-1';
export const VIEWER_TOKEN = 'viewer-token-1';
export const EDITOR_TOKEN = 'editor-token-1';

/** A database the suites run on: PGlite always, PostgreSQL when TEST_DATABASE_URL is set. */
export interface Backend {
  name: string;
  /** Options selecting a fresh, isolated database for one test file. */
  options(): Promise<Partial<FlagServerOptions>>;
  /** Drops what `options` created. */
  cleanup(): Promise<void>;
}

const ROOT = path.resolve(__dirname, '../../..');

/**
 * A data directory in which PGlite ran initdb and nothing else: PGlite's initdb is seconds of CPU,
 * opening a directory it initialised a fraction of one. Made once per PGlite version (in a child
 * process: PGlite cannot load its WebAssembly inside Jest's VM) and shared by every test file of
 * the run, each of which works on a copy of its own.
 */
async function pgliteTemplate(): Promise<string> {
  const manifest = path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json');
  const { version } = JSON.parse(await readFile(manifest, 'utf8')) as { version: string };
  const template = path.join(tmpdir(), `flags-pglite-initdb-${version}-${process.getuid?.() ?? 'user'}`);
  if (
    await stat(path.join(template, 'PG_VERSION')).then(
      () => true,
      () => false,
    )
  )
    return template;
  const making = await mkdtemp(`${template}.making-`);
  const script =
    "const { PGlite } = require('@electric-sql/pglite');" +
    '(async () => { const db = new PGlite(process.argv[1]); await db.waitReady; await db.close(); })()' +
    '.catch((e) => { console.error(e); process.exit(1); });';
  await new Promise<void>((resolve, reject) =>
    execFile(process.execPath, ['-e', script, path.join(making, 'data')], { cwd: ROOT }, (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  // Atomic: another worker may have made it meanwhile; then its copy is used and this one dropped.
  await rename(path.join(making, 'data'), template).catch(() => undefined);
  await rm(making, { recursive: true, force: true });
  return template;
}

/**
 * PGlite in a fresh folder of its own, copied from `pgliteTemplate()`: the same embedded database,
 * empty but for initdb's catalog, that the flags-server migrates and seeds as on any first start.
 * `storage.test.ts` covers a data directory the server initialises itself, and other suites `memory`.
 */
const pgliteBackend = (): Backend => {
  const dirs: string[] = [];
  return {
    name: 'PGlite',
    async options() {
      const template = await pgliteTemplate();
      const dir = await mkdtemp(path.join(tmpdir(), 'flags-pglite-'));
      dirs.push(dir);
      const dataDir = path.join(dir, 'data');
      // cp(1): several times faster than Node's copy for initdb's thousand small files
      await new Promise<void>((resolve, reject) =>
        execFile('cp', ['-R', template, dataDir], (err) => (err ? reject(err) : resolve())),
      );
      return { dataDir };
    },
    async cleanup() {
      await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
    },
  };
};

const postgresBackend = (url: string): Backend => {
  const schemas: string[] = [];
  return {
    name: 'PostgreSQL',
    async options() {
      const schema = `test_${randomBytes(6).toString('hex')}`;
      schemas.push(schema);
      return { databaseUrl: url, databaseSchema: schema };
    },
    async cleanup() {
      const client = new Client({ connectionString: url });
      await client.connect();
      try {
        for (const schema of schemas.splice(0))
          await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
};

export function backends(): Backend[] {
  const url = process.env.TEST_DATABASE_URL;
  return url ? [pgliteBackend(), postgresBackend(url)] : [pgliteBackend()];
}

export const TOKENS: Pick<FlagServerOptions, 'clientTokens' | 'adminTokens'> = {
  clientTokens: [CLIENT_TOKEN],
  adminTokens: [ADMIN_TOKEN, `${VIEWER_TOKEN}:Viewer`, `${EDITOR_TOKEN}:Editor`],
};

/** A flag server on the backend with the test tokens, a silent logger and no environment variables. */
export async function testServer(backend: Backend, extra: FlagServerOptions = {}): Promise<FlagServer> {
  return createFlagServer(
    { ...TOKENS, logger: silentLogger, featuresWatchInterval: 0, ...(await backend.options()), ...extra },
    {},
  );
}

/**
 * One flag server per `describe` block: started before its tests, closed (and the backend's schema
 * dropped) after them. Call it inside the block; the returned function gives the running server.
 */
export function useTestServer(backend: Backend, extra: FlagServerOptions = {}): () => FlagServer {
  let server: FlagServer | undefined;
  // Starting PGlite (WebAssembly) takes seconds, and far longer on a machine busy with other suites.
  beforeAll(async () => {
    server = await testServer(backend, extra);
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    await backend.cleanup();
  });
  return () => {
    if (!server) throw new Error('the test server is not running: use it inside a test');
    return server;
  };
}
