import path from 'node:path';
import * as p from '../../common/config/parsers';
import { envExampleLines, optionsMarkdownTable } from '../../common/config/markdown';
import { loggingOptions } from '../../common/config/logging-options';
import type { OptionSpec } from '../../common/config/resolve';
import { adminTokens } from '../auth/admin-tokens';
import { tokenScope } from '../auth/token-format';
import { packageRoot } from '../../common/files/package-root';

const postgresUrl: p.Parser<string> = (value) => {
  const s = p.string(value);
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    throw new p.ParseError('must be a PostgreSQL URL, e.g. postgres://user:password@localhost:5432/flags');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new p.ParseError('must be a postgres:// or postgresql:// URL');
  }
  return s;
};

const schemaName: p.Parser<string> = (value) => {
  const s = p.string(value);
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(s)) {
    throw new p.ParseError('must be a lower-case SQL identifier (letters, digits, _), e.g. flags');
  }
  return s;
};

const environmentList: p.Parser<string[]> = (value) => {
  const items = p.nonEmptyList(value);
  const bad = items.find((e) => !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(e));
  if (bad !== undefined)
    throw new p.ParseError(`environment names use letters, digits, _ . and - (got "${bad}")`);
  return [...new Set(items)];
};

const unleashTokenList: p.Parser<string[]> = (value) => {
  const items = p.list(value);
  if (items.some((t) => tokenScope(t) === undefined)) {
    throw new p.ParseError(
      'each token must look like <project>:<environment>.<secret>, e.g. *:development.abc123',
    );
  }
  return items;
};

/** The example flags shipped with the package; the default features file. */
export const EXAMPLE_FEATURES_FILE = path.join(packageRoot(), 'examples', 'features.json');

/**
 * Every option of flags-server, declared once. The table in docs/flags-server.md and `.env.server.example` are
 * generated from this list (and a test checks that the page carries exactly this table).
 */
export const SERVER_OPTIONS: readonly OptionSpec[] = [
  {
    key: 'port',
    env: ['FLAGS_SERVER_PORT', 'PORT'],
    parse: p.port,
    default: 4242,
    doc: 'Port `startFlagServer()` / `flags-server` listens on; `FLAGS_SERVER_PORT` wins over `PORT`',
  },
  {
    key: 'databaseUrl',
    env: ['DATABASE_URL'],
    parse: postgresUrl,
    secret: true,
    defaultDoc: '(unset: embedded PGlite)',
    doc: 'PostgreSQL URL; when unset the embedded PostgreSQL (PGlite) in `dataDir` is used',
  },
  {
    key: 'databaseSchema',
    env: ['FLAGS_SERVER_DATABASE_SCHEMA'],
    parse: schemaName,
    default: 'public',
    doc: 'Schema for the tables on `DATABASE_URL` (created if missing); lets several servers or tests share one database',
  },
  {
    key: 'dataDir',
    env: ['FLAGS_SERVER_DATA_DIR'],
    parse: p.string,
    default: '.data/flags-server',
    doc: 'Folder where the embedded PGlite database is persisted (relative to the working directory); `memory` keeps it in memory. Ignored with `DATABASE_URL`',
  },
  {
    key: 'featuresFile',
    env: ['FLAGS_SERVER_FEATURES_FILE'],
    parse: p.string,
    default: EXAMPLE_FEATURES_FILE,
    defaultDoc: '`examples/features.json` (shipped)',
    doc: 'JSON file with the flag definitions (client-API format); re-read when it changes',
  },
  {
    key: 'featuresWatchInterval',
    env: ['FLAGS_SERVER_FEATURES_WATCH_INTERVAL'],
    parse: p.wholeNumber,
    default: 1000,
    // a Node timer holds at most 2^31-1 ms; longer would poll the file every millisecond
    max: 3_600_000,
    maxDoc: '3600000 ms (1 hour)',
    doc: 'Milliseconds between checks of the features file for changes; 0 disables watching',
  },
  {
    key: 'environments',
    env: ['FLAGS_SERVER_ENVIRONMENTS'],
    parse: environmentList,
    default: ['development', 'production'],
    doc: 'Comma-separated environments that environment permissions may name',
  },
  {
    key: 'clientTokens',
    env: ['FLAGS_SERVER_CLIENT_TOKENS'],
    parse: p.list,
    default: [],
    defaultDoc: '(none)',
    secret: true,
    doc: 'Comma-separated client tokens accepted on `/api/client/*` (SDKs, the proxy)',
  },
  {
    key: 'frontendTokens',
    env: ['FLAGS_SERVER_FRONTEND_TOKENS'],
    parse: unleashTokenList,
    default: [],
    defaultDoc: '(none)',
    secret: true,
    doc: "Comma-separated frontend tokens in Unleash's format `<project>:<environment>.<secret>` (`*` for every project), confirmed by `POST /edge/validate`",
  },
  {
    key: 'adminTokens',
    env: ['FLAGS_SERVER_ADMIN_TOKENS'],
    parse: adminTokens,
    default: [],
    defaultDoc: '(none)',
    secret: true,
    doc: 'Comma-separated admin tokens, each `token` (root role Admin) or `token:RoleName`, e.g. `tok2:Viewer`',
  },
  ...loggingOptions('info'),
];

/** The configuration table of flags-server (docs/flags-server.md), generated from SERVER_OPTIONS. */
export function serverConfigMarkdownTable(): string {
  return optionsMarkdownTable(SERVER_OPTIONS);
}

/** The content of `.env.server.example`, generated from SERVER_OPTIONS. */
export function serverEnvExample(): string {
  return [
    '# flags-server configuration. Every variable is optional; defaults shown.',
    ...envExampleLines(SERVER_OPTIONS),
    '',
  ].join('\n');
}
