import type { Logger } from '../../common/logging/logger';
import type { ServerConfig } from '../config/types';
import type { Db } from './db';
import { openPgDb } from './pg-db';
import { openPgliteDb } from './pglite-db';

/** PostgreSQL through `pg` when a database URL is configured, the embedded PGlite otherwise. */
export function openDb(
  config: Pick<ServerConfig, 'databaseUrl' | 'databaseSchema' | 'dataDir'>,
  logger: Logger,
): Promise<Db> {
  if (config.databaseUrl !== undefined) return openPgDb(config.databaseUrl, config.databaseSchema, logger);
  return openPgliteDb(config.dataDir);
}
