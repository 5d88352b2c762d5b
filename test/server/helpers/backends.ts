import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { silentLogger } from '../../../src/common/logging/logger';
import { createFlagServer, type FlagServer, type FlagServerOptions } from '../../../src/server';
import { freshPgliteDir } from '../../support/pglite';

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

/**
 * PGlite in a fresh folder of its own (`freshPgliteDir()`): the same embedded database,
 * empty but for initdb's catalog, that the flags-server migrates and seeds as on any first start.
 * `storage.test.ts` covers a data directory the server initialises itself, and other suites `memory`.
 */
const pgliteBackend = (): Backend => {
  const removals: Array<() => Promise<void>> = [];
  return {
    name: 'PGlite',
    async options() {
      const fresh = await freshPgliteDir();
      removals.push(fresh.remove);
      return { dataDir: fresh.dataDir };
    },
    async cleanup() {
      await Promise.all(removals.splice(0).map((remove) => remove()));
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
