/**
 * Regenerates the proxy's option table in README.md (between the proxy-options markers) and
 * `.env.example` from the option declarations. Run with `npm run docs`; a test checks both.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { envExampleLines, optionsMarkdownTable } from '../src/common/config/markdown';
import { PROXY_OPTIONS } from '../src/proxy/config/options';

const root = path.resolve(__dirname, '..', __dirname.includes(`${path.sep}dist${path.sep}`) ? '..' : '');
const readmePath = path.join(root, 'README.md');
const readme = readFileSync(readmePath, 'utf8');
const start = '<!-- proxy-options:start -->';
const end = '<!-- proxy-options:end -->';
const before = readme.slice(0, readme.indexOf(start) + start.length);
const after = readme.slice(readme.indexOf(end));
writeFileSync(readmePath, `${before}\n${optionsMarkdownTable(PROXY_OPTIONS)}\n${after}`);

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
