import { readFileSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../../common/files/package-root';
import { SUBCOMMAND_FLAGS, TOP_FLAGS, type EdgeFlag } from './edge-flags';

/** The version in package.json. */
export function packageVersion(): string {
  const file = path.join(packageRoot(), 'package.json');
  const version = (JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version;
  return typeof version === 'string' ? version : 'unknown';
}

function flagLines(flags: readonly EdgeFlag[]): string[] {
  return flags
    .filter((f) => f.help !== undefined)
    .map((f) => {
      const [placeholder, text] = f.help ?? ['', ''];
      const names = `${f.short !== undefined ? `-${f.short}, ` : '    '}--${f.long}${placeholder ? ` ${placeholder}` : ''}`;
      return `  ${names.padEnd(48)} ${f.variable.padEnd(36)} ${text}`;
    });
}

/** What `--help` prints: the commands, the flags that matter and the variables they read. */
export function helpText(): string {
  return [
    `flags-proxy ${packageVersion()}: an Unleash-compatible feature-flag proxy`,
    '',
    'Usage:',
    "  flags-proxy                  serve, configured by the environment: the specification's names",
    '                               (FLAGS_URL, FLAGS_API_TOKEN, FLAGS_PROXY_CLIENT_KEYS; or UNLEASH_*)',
    "                               or Unleash Edge's (UPSTREAM_URL, TOKENS)",
    "  flags-proxy edge [flags]     serve under Unleash Edge's contract: port 3063, /all on, tokens validated upstream",
    "  flags-proxy offline [flags]  serve the definitions of a file, no upstream (Edge's offline mode)",
    '  flags-proxy health [flags]   exit 0 if the instance answers {"status":"OK"} on /internal-backstage/health',
    '  flags-proxy ready [flags]    exit 0 if the instance answers {"status":"READY"} on /internal-backstage/ready',
    '  flags-proxy --help | --version',
    '',
    'Every flag is also read from its variable; a flag wins. Flags before the command:',
    ...flagLines(TOP_FLAGS),
    '',
    'edge:',
    ...flagLines(SUBCOMMAND_FLAGS.edge),
    '',
    'offline:',
    ...flagLines(SUBCOMMAND_FLAGS.offline),
    '',
    "health, ready (3 s timeout; EDGE_URL defaults to this container's PORT and BASE_PATH when set):",
    ...flagLines(SUBCOMMAND_FLAGS.health),
    '',
    'Logging: LOG_LEVEL (debug, info, warn, error, fatal) or RUST_LOG (warn, unleash_edge=debug,…);',
    'JSON_LOGGER=true or LOG_FORMAT=json for one JSON object per line. Ours win when both are set.',
    'Every option, with its variable and default: docs/configuration.md (the option table).',
    '',
  ].join('\n');
}
