import path from 'node:path';
import { ConfigError, resolveOptions } from '../../common/config/resolve';
import { createLogger, type Logger, type LogLevel } from '../../common/logging/logger';
import type { AdminTokenSpec } from '../auth/admin-tokens';
import { SERVER_OPTIONS } from './options';
import type { FlagServerOptions, ServerConfig } from './types';

type Env = Record<string, string | undefined>;

/**
 * The one place flags-server configuration is read: options given in code win over the environment,
 * which wins over defaults. Pure apart from creating the default logger; throws a ConfigError naming
 * every missing or malformed option.
 */
export function parseServerConfig(options: FlagServerOptions = {}, env: Env = process.env): ServerConfig {
  const { values, problems } = resolveOptions(SERVER_OPTIONS, options, env);
  const get = <T>(key: string): T => values.get(key) as T;

  const clientTokens = get<string[]>('clientTokens');
  const admin = get<AdminTokenSpec[] | undefined>('adminTokens') ?? [];
  const frontendTokens = get<string[]>('frontendTokens');
  const clash = admin.find((a) => clientTokens.includes(a.token));
  if (clash)
    problems.push(
      'A token is listed both in FLAGS_SERVER_CLIENT_TOKENS and FLAGS_SERVER_ADMIN_TOKENS; use distinct tokens',
    );
  if (frontendTokens.some((t) => clientTokens.includes(t) || admin.some((a) => a.token === t)))
    problems.push(
      'A token is listed both in FLAGS_SERVER_FRONTEND_TOKENS and another token list; use distinct tokens',
    );
  if (problems.length > 0) throw new ConfigError(problems);

  const logLevel = get<LogLevel>('logLevel');
  const useJsonLogger = get<boolean>('useJsonLogger');
  const logger: Logger =
    get<Logger | undefined>('logger') ??
    createLogger({ level: logLevel, json: useJsonLogger, name: 'flags-server' });
  const dataDir = get<string>('dataDir');
  return {
    port: get<number>('port'),
    databaseUrl: get<string | undefined>('databaseUrl'),
    databaseSchema: get<string>('databaseSchema'),
    dataDir: dataDir === 'memory' ? 'memory' : path.resolve(dataDir),
    featuresFile: path.resolve(get<string>('featuresFile')),
    featuresWatchInterval: get<number>('featuresWatchInterval'),
    environments: get<string[]>('environments'),
    clientTokens: [...new Set(clientTokens)],
    frontendTokens: [...new Set(frontendTokens)],
    adminTokens: admin,
    logger,
    logLevel,
    useJsonLogger,
  };
}
