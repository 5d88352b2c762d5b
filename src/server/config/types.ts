import type { Logger, LogLevel } from '../../common/logging/logger';
import type { AdminTokenSpec } from '../auth/admin-tokens';

/** Options of `createFlagServer` given in code; anything left out is read from the environment. */
export interface FlagServerOptions {
  port?: number;
  databaseUrl?: string;
  databaseSchema?: string;
  /** Folder of the embedded database, or `memory`. */
  dataDir?: string;
  featuresFile?: string;
  featuresWatchInterval?: number;
  environments?: string[] | string;
  clientTokens?: string[] | string;
  /** Frontend tokens in Unleash's format `<project>:<environment>.<secret>`. */
  frontendTokens?: string[] | string;
  adminTokens?: Array<string | AdminTokenSpec> | string;
  logger?: Logger;
  logLevel?: LogLevel;
  useJsonLogger?: boolean;
}

/** The resolved, typed configuration of a flag server. */
export interface ServerConfig {
  port: number;
  databaseUrl: string | undefined;
  databaseSchema: string;
  /** Absolute folder of the embedded database, or `memory`. */
  dataDir: string;
  featuresFile: string;
  featuresWatchInterval: number;
  environments: string[];
  clientTokens: string[];
  frontendTokens: string[];
  adminTokens: AdminTokenSpec[];
  logger: Logger;
  logLevel: LogLevel;
  useJsonLogger: boolean;
}
