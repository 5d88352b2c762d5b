import { packageVersion } from '../../common/files/package-version';
import { SERVER_OPTIONS } from '../config/options';

/** What `flags-server`'s arguments ask: serve (none), the help, the version, or a mistake. */
export type ServerCommand =
  { kind: 'serve' } | { kind: 'help' } | { kind: 'version' } | { kind: 'mistake'; message: string };

/** Reads `flags-server`'s arguments: it is configured by environment variables, not flags. */
export function serverCommand(args: readonly string[]): ServerCommand {
  if (args.length === 0) return { kind: 'serve' };
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) return { kind: 'help' };
  if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) return { kind: 'version' };
  const [first] = args;
  return {
    kind: 'mistake',
    message: `unknown argument "${first.slice(0, 100)}": flags-server is configured by environment variables (see flags-server --help)`,
  };
}

export function serverVersion(): string {
  return `flags-server ${packageVersion()}\n`;
}

/** The help text: what it does, then every variable it reads with its default and meaning. */
export function serverHelp(): string {
  const rows = SERVER_OPTIONS.filter((o) => o.env.length > 0).map((o) => {
    const fallback =
      o.defaultDoc ??
      (o.default === undefined ? '' : Array.isArray(o.default) ? o.default.join(',') : String(o.default));
    const plain = fallback.replace(/`/g, '');
    const shown = plain === '' ? '' : plain.startsWith('(') ? ` ${plain}` : ` (default: ${plain})`;
    return `  ${o.env.join(', ')}\n      ${o.doc.replace(/`/g, '')}${shown}`;
  });
  return [
    `flags-server ${packageVersion()}: the flag server (Unleash's client, frontend and admin APIs, with the admin UI)`,
    '',
    'Usage: flags-server            serve, configured by the environment variables below',
    '       flags-server --help     print this help',
    '       flags-server --version  print the version',
    '',
    'It listens on every interface (IPv6 and IPv4) on FLAGS_SERVER_PORT, and says so in its start-up line.',
    '',
    'Environment variables:',
    ...rows,
    '',
  ].join('\n');
}
