import { Pool, type PoolClient } from 'pg';
import type { Logger } from '../../common/logging/logger';
import { asNotReady, sqlState, type Db, type Queryable, type SqlParam } from './db';

/** The `pg` adapter: a connection pool whose sessions use `schema` as their search path. */
export async function openPgDb(url: string, schema: string, logger: Logger): Promise<Db> {
  const pool = new Pool({
    connectionString: url,
    options: `-c search_path=${schema}`,
    max: 10,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30000,
    application_name: schema === 'public' ? 'flags-server' : `flags-server/${schema}`,
  });
  // An idle client losing its connection emits 'error' on the pool; unhandled, it would crash the process.
  pool.on('error', (err) => logger.warn('database connection lost', { error: err.message }));

  const run = async <Row extends object>(
    target: Pool | PoolClient,
    sql: string,
    params?: readonly SqlParam[],
  ): Promise<Row[]> => {
    try {
      const result = await target.query(sql, params ? [...params] : undefined);
      return result.rows as Row[];
    } catch (err) {
      return asNotReady(err);
    }
  };

  const exec = async (target: Pool | PoolClient, sql: string): Promise<void> => {
    try {
      await target.query(sql);
    } catch (err) {
      asNotReady(err);
    }
  };

  let closed: Promise<void> | undefined;
  if (schema !== 'public') {
    try {
      await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    } catch (err) {
      // Two servers creating the schema at once: one of them sees a duplicate; the schema exists.
      if (sqlState(err) !== '23505' && sqlState(err) !== '42P06') {
        await pool.end();
        throw err;
      }
    }
  }

  return {
    kind: 'pg',
    query: (sql, params) => run(pool, sql, params),
    exec: (sql) => exec(pool, sql),
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      let client: PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        return asNotReady(err);
      }
      const tx: Queryable = {
        query: (sql, params) => run(client, sql, params),
        exec: (sql) => exec(client, sql),
      };
      let broken: Error | undefined;
      try {
        await tx.query('BEGIN');
        const result = await fn(tx);
        await tx.query('COMMIT');
        return result;
      } catch (err) {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackError) {
          broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
        }
        throw err;
      } finally {
        client.release(broken);
      }
    },
    close: () => {
      closed ??= pool.end();
      return closed;
    },
  };
}
