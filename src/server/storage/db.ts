import { NotReady } from '../../common/errors/http-errors';

export type SqlParam = string | number | boolean | null;

/** Anything SQL can be sent to: the database, or one transaction of it. */
export interface Queryable {
  query<Row extends object = Record<string, unknown>>(
    sql: string,
    params?: readonly SqlParam[],
  ): Promise<Row[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/**
 * The tiny database seam of flags-server. One PostgreSQL implementation of every store runs on it,
 * with two adapters: `pg` (a Pool) and PGlite (embedded).
 */
export interface Db extends Queryable {
  readonly kind: 'pg' | 'pglite';
  /** Runs `fn` in one transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** The SQLSTATE code of a PostgreSQL error, from either adapter. */
export function sqlState(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : undefined;
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EAI_AGAIN',
]);
const CONNECTION_MESSAGES = [
  'Connection terminated',
  'connection error',
  'timeout exceeded when trying to connect',
  'Cannot use a pool after calling end',
  'PGlite is closed',
  'Client was closed',
];

/** True for errors meaning "the database cannot be reached", as opposed to a failing statement. */
export function isConnectionError(err: unknown): boolean {
  const code = sqlState(err);
  if (code !== undefined && (NETWORK_CODES.has(code) || code.startsWith('08') || code.startsWith('57P')))
    return true;
  // Duck-typed: PGlite's errors come from another realm (see pglite-db.ts), so instanceof fails.
  const raw = typeof err === 'object' && err !== null ? (err as { message?: unknown }).message : undefined;
  const message = typeof raw === 'string' ? raw : '';
  return CONNECTION_MESSAGES.some((m) => message.includes(m));
}

/** Re-throws connection losses as NotReady (503); other errors pass unchanged. */
export function asNotReady(err: unknown): never {
  if (isConnectionError(err)) {
    throw new NotReady('The database is not reachable; try again shortly');
  }
  throw err;
}
