/**
 * Regenerates the proxy's option table in docs/configuration.md (between the proxy-options markers),
 * the table of Unleash Edge's variables in docs/unleash-edge.md (edge-variables markers), flags-server's
 * option table in docs/flags-server.md (flags-server-options markers) and
 * `.env.example` and `.env.server.example` from the declarations. Run with `npm run docs`; tests check each.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { envExampleLines, optionsMarkdownTable } from '../src/common/config/markdown';
import { edgeVariablesMarkdownTable } from '../src/proxy/config/edge-variables';
import { PROXY_OPTIONS } from '../src/proxy/config/options';
import { serverConfigMarkdownTable, serverEnvExample } from '../src/server/config/options';

const root = path.resolve(__dirname, '..', __dirname.includes(`${path.sep}dist${path.sep}`) ? '..' : '');
/** Replaces what stands between `<!-- name:start -->` and `<!-- name:end -->` with `table`. */
function between(text: string, name: string, table: string): string {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  return `${text.slice(0, text.indexOf(start) + start.length)}\n${table}\n${text.slice(text.indexOf(end))}`;
}
/** Rewrites the generated part `name` of the page `page` (a path under docs/). */
function regenerate(page: string, name: string, table: string): void {
  const file = path.join(root, 'docs', page);
  writeFileSync(file, between(readFileSync(file, 'utf8'), name, table));
}
regenerate('configuration.md', 'proxy-options', optionsMarkdownTable(PROXY_OPTIONS));
regenerate('unleash-edge.md', 'edge-variables', edgeVariablesMarkdownTable());
regenerate('flags-server.md', 'flags-server-options', serverConfigMarkdownTable());

const header = [
  '# flags-proxy configuration. Copy to .env (or pass with `docker run --env-file`) and fill in.',
  '# Required: FLAGS_URL, FLAGS_API_TOKEN, FLAGS_PROXY_CLIENT_KEYS. Everything else has the default shown.',
  "# The reference Unleash proxy's UNLEASH_* names and Unleash Edge's names (UPSTREAM_URL, TOKENS, PRETRUSTED_TOKENS, REDIS_URL, BASE_PATH, TOKEN_HEADER, APP_NAME, INSTANCE_ID) are read too (each noted below); a FLAGS_* name wins.",
  '',
];
writeFileSync(
  path.join(root, '.env.example'),
  `${[...header, ...envExampleLines(PROXY_OPTIONS)].join('\n')}\n`,
);
writeFileSync(path.join(root, '.env.server.example'), serverEnvExample());
