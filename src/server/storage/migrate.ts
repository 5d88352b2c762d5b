import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../common/logging/logger';
import type { Db } from './db';
import { packageRoot } from '../../common/files/package-root';

/** The folder of the plain SQL migrations (not copied by tsc, so found from the package root). */
export function migrationsDir(): string {
  return path.join(packageRoot(), 'src', 'server', 'migrations');
}

/**
 * Runs every `*.sql` file of the migrations folder not yet applied, in file-name order, each in the
 * same transaction as its bookkeeping row. A transaction-scoped advisory lock serialises servers
 * starting together on one database, so each migration runs exactly once.
 */
export async function migrate(db: Db, logger: Logger, dir: string = migrationsDir()): Promise<string[]> {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort();
  return db.transaction(async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('flags-server-migrations:' || current_schema()))");
    await tx.query(
      'CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())',
    );
    const done = new Set(
      (await tx.query<{ name: string }>('SELECT name FROM migrations')).map((r) => r.name),
    );
    const applied: string[] = [];
    for (const file of files) {
      if (done.has(file)) continue;
      const sql = readFileSync(path.join(dir, file), 'utf8');
      await tx.exec(sql);
      await tx.query('INSERT INTO migrations (name) VALUES ($1)', [file]);
      applied.push(file);
      logger.info('applied database migration', { migration: file });
    }
    return applied;
  });
}
