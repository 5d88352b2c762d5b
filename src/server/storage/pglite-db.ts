import { mkdirSync } from 'node:fs';
import * as nodeModule from 'node:module';
import path from 'node:path';
import { asNotReady, type Db, type Queryable, type SqlParam } from './db';

type PgliteModule = typeof import('@electric-sql/pglite');

interface NodeModuleClass {
  new (id: string): { filename: string; paths: string[]; require(id: string): unknown };
  _nodeModulePaths(dir: string): string[];
}

/**
 * PGlite loads its WebAssembly with dynamic `import()`, which a module evaluated inside Jest's VM
 * cannot do (it would need --experimental-vm-modules). Loading it with Node's own loader works in
 * tests and in production alike: `Module.prototype.require` is Node's, also under Jest, which
 * replaces `createRequire` but keeps the Module class it extends.
 */
function loadPglite(): PgliteModule {
  const { Module } = nodeModule as unknown as { Module: NodeModuleClass };
  const loader = new Module(__filename);
  loader.filename = __filename;
  loader.paths = Module._nodeModulePaths(path.dirname(__filename));
  return loader.require('@electric-sql/pglite') as PgliteModule;
}

interface PgliteQueryable {
  query<Row>(sql: string, params?: unknown[]): Promise<{ rows: Row[] }>;
  exec(sql: string): Promise<unknown>;
}

async function run<Row extends object>(
  target: PgliteQueryable,
  sql: string,
  params?: readonly SqlParam[],
): Promise<Row[]> {
  try {
    const result = await target.query<Row>(sql, params ? [...params] : undefined);
    return result.rows;
  } catch (err) {
    return asNotReady(err);
  }
}

async function exec(target: PgliteQueryable, sql: string): Promise<void> {
  try {
    await target.exec(sql);
  } catch (err) {
    asNotReady(err);
  }
}

/**
 * The embedded adapter: PostgreSQL compiled to WebAssembly, persisted in `dataDir` (or in memory
 * when `dataDir` is `memory`). One connection; PGlite queues concurrent queries.
 */
export async function openPgliteDb(dataDir: string): Promise<Db> {
  if (dataDir !== 'memory') mkdirSync(dataDir, { recursive: true });
  const { PGlite } = loadPglite();
  const pglite = dataDir === 'memory' ? new PGlite() : new PGlite(dataDir);
  await pglite.waitReady;
  return {
    kind: 'pglite',
    query: (sql, params) => run(pglite, sql, params),
    exec: (sql) => exec(pglite, sql),
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      pglite.transaction((tx) =>
        fn({ query: (sql, params) => run(tx, sql, params), exec: (sql) => exec(tx, sql) }),
      ),
    async close() {
      if (!pglite.closed) await pglite.close();
    },
  };
}
