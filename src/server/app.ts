import express from 'express';
import { errorMiddleware, notFoundHandler } from '../common/http/error-middleware';
import { apiTokensRouter } from './api-tokens/router';
import { requireToken } from './auth/authenticate';
import { seedTokens } from './auth/seed-tokens';
import { PgTokenStore, type TokenStore } from './auth/token-store';
import { clientApiRouter } from './client-api/router';
import { PgClientStore, type ClientStore } from './client-metrics/client-store';
import { parseServerConfig } from './config/parse-config';
import type { FlagServerOptions, ServerConfig } from './config/types';
import { edgeRouter } from './edge/router';
import { EDGE_VALIDATE_BODY_LIMIT } from './edge/schemas';
import { FeatureSource } from './features/feature-source';
import { healthRouter } from './health/router';
import { rejectMalformedPath } from './http/reject-malformed-path';
import { PgRoleStore, type RoleStore } from './roles/role-store';
import { rolesRouter } from './roles/router';
import type { Db } from './storage/db';
import { migrate } from './storage/migrate';
import { openDb } from './storage/open-db';

export interface FlagServerStores {
  roles: RoleStore;
  tokens: TokenStore;
  clients: ClientStore;
}

/** A flag server that is not listening yet: the Express app and what must be closed. */
export interface FlagServer {
  app: express.Express;
  config: ServerConfig;
  stores: FlagServerStores;
  features: FeatureSource;
  db: Db;
  /** Stops watching the features file and closes the database. Idempotent. */
  close(): Promise<void>;
}

const BODY_LIMIT = 1024 * 1024;

type Env = Record<string, string | undefined>;

/**
 * Builds a flag server: parses the configuration (ConfigError when it is not valid), opens the
 * database, runs the migrations, seeds the configured tokens and loads the features file. Never listens.
 */
export async function createFlagServer(
  options: FlagServerOptions = {},
  env: Env = process.env,
): Promise<FlagServer> {
  const config = parseServerConfig(options, env);
  const { logger } = config;
  const db = await openDb(config, logger);
  let features: FeatureSource | undefined;
  try {
    await migrate(db, logger);
    const stores: FlagServerStores = {
      roles: new PgRoleStore(db),
      tokens: new PgTokenStore(db),
      clients: new PgClientStore(db),
    };
    for (const name of await stores.roles.fillNameKeys()) {
      logger.warn('a role name looks like the name of an older role; it cannot be found by name', {
        role: name,
      });
    }
    await seedTokens(
      stores.tokens,
      stores.roles,
      config.clientTokens,
      config.adminTokens,
      config.frontendTokens,
    );
    features = await FeatureSource.open(config.featuresFile, logger, config.featuresWatchInterval);

    const app = express();
    app.disable('x-powered-by');
    app.set('etag', false);
    app.use(rejectMalformedPath);
    app.use(healthRouter(db));
    app.use(
      '/api/client',
      clientApiRouter({ tokens: stores.tokens, features, clients: stores.clients, bodyLimit: BODY_LIMIT }),
    );
    app.use(edgeRouter({ tokens: stores.tokens, bodyLimit: EDGE_VALIDATE_BODY_LIMIT }));
    app.use(
      '/api/admin',
      requireToken(stores.tokens, 'admin'),
      rolesRouter({ roles: stores.roles, environments: config.environments, bodyLimit: BODY_LIMIT }),
      apiTokensRouter({
        tokens: stores.tokens,
        roles: stores.roles,
        environments: config.environments,
        bodyLimit: BODY_LIMIT,
      }),
    );
    app.use(notFoundHandler);
    app.use(errorMiddleware(logger));

    let closing: Promise<void> | undefined;
    const source = features;
    return {
      app,
      config,
      stores,
      features: source,
      db,
      close: () => {
        closing ??= (async () => {
          source.close();
          await db.close();
        })();
        return closing;
      },
    };
  } catch (err) {
    features?.close();
    await db.close().catch(() => undefined);
    throw err;
  }
}
