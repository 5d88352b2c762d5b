import { ConfigError } from '../../common/config/resolve';
import type { ProxyOptions } from '../config/types';
import { PROXY_OPTIONS } from '../config/options';
import {
  isSubcommand,
  SUBCOMMAND_FLAGS,
  SUBCOMMANDS,
  TOP_FLAGS,
  type EdgeFlag,
  type Subcommand,
} from './edge-flags';

type Env = Record<string, string | undefined>;

/** What the program was asked to do. */
export type Command =
  | { kind: 'help' }
  | { kind: 'version' }
  | {
      kind: 'serve';
      /** `default`: no subcommand (the names in the environment choose the contract). */
      mode: 'default' | 'edge' | 'offline';
      options: ProxyOptions;
      /** The variables the flags set, to lay over the environment. */
      variables: Record<string, string>;
      /** The flag each of those variables was given as, for messages: `UPSTREAM_URL` → `--upstream-url`. */
      flags: Record<string, string>;
    }
  | {
      kind: 'check';
      endpoint: 'health' | 'ready';
      variables: Record<string, string>;
      flags: Record<string, string>;
    };

/** The one-line form of the command line, named in every argument problem. */
export const USAGE =
  'flags-proxy [edge|offline|health|ready] [--flag value …] (flags-proxy --help lists the flags)';

const problem = (line: string) => new ConfigError([line]);

function find(flags: readonly EdgeFlag[], arg: string): EdgeFlag | undefined {
  if (arg.startsWith('--')) return flags.find((f) => f.long === arg.slice(2));
  return flags.find((f) => f.short !== undefined && f.short === arg.slice(1, 2));
}

/**
 * Reads the program's arguments as Unleash Edge's command line: optional flags, a subcommand
 * (`edge`, `offline`, `health`, `ready`) and its flags. Flags take `--flag value`, `--flag=value`,
 * `-f value` or `-fvalue`; a switch takes no value (`--flag=false` turns it off); list flags add up
 * when repeated. No arguments at all: the configuration is the environment's, as before. Anything
 * unknown is a ConfigError of one line naming it and the expected form.
 */
export function parseArguments(args: readonly string[]): Command {
  if (args.some((a) => a === '--help' || a === '-h') || args[0] === 'help') return { kind: 'help' };
  if (args.some((a) => a === '--version' || a === '-V')) return { kind: 'version' };
  const variables: Record<string, string> = {};
  const flags: Record<string, string> = {};
  let subcommand: Subcommand | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith('-') || arg === '-' || arg === '--') {
      if (subcommand !== undefined || !isSubcommand(arg))
        throw problem(
          subcommand === undefined
            ? `Unknown command ${JSON.stringify(arg)}: expected one of ${SUBCOMMANDS.join(', ')}; usage: ${USAGE}`
            : `Unexpected argument ${JSON.stringify(arg)} after ${subcommand}: flags are --name value; usage: ${USAGE}`,
        );
      subcommand = arg;
      continue;
    }
    const long = arg.startsWith('--');
    const eq = long ? arg.indexOf('=') : -1;
    const name = eq > 0 ? arg.slice(0, eq) : long ? arg : arg.slice(0, 2);
    // Before the subcommand: the top-level flags; after it: its own, then the global ones (and, by
    // their long names, the other top-level ones, which Edge wants before it).
    const known =
      subcommand === undefined
        ? find(TOP_FLAGS, name)
        : (find(SUBCOMMAND_FLAGS[subcommand], name) ??
          find(
            TOP_FLAGS.filter((f) => f.global || long),
            name,
          ));
    const where = subcommand === undefined ? 'before the command' : `for ${subcommand}`;
    if (known === undefined) throw problem(`Unknown flag ${name} ${where}; usage: ${USAGE}`);
    let given: string | undefined;
    if (eq > 0) given = arg.slice(eq + 1);
    else if (!long && arg.length > 2) given = arg.slice(2).trim();
    if (known.kind === 'switch') {
      if (given !== undefined && !/^(true|false)$/i.test(given))
        throw problem(`${name} takes no value (or =true, =false); usage: ${USAGE}`);
      given = (given ?? 'true').toLowerCase();
    } else if (given === undefined) {
      given = args[++i];
      if (given === undefined) throw problem(`${name} needs a value; usage: ${USAGE}`);
    }
    const previous = variables[known.variable];
    variables[known.variable] =
      known.kind === 'list' && previous !== undefined ? `${previous},${given}` : given;
    flags[known.variable] = `--${known.long}`;
  }
  if (subcommand === 'health' || subcommand === 'ready')
    return { kind: 'check', endpoint: subcommand, variables, flags };
  const mode = subcommand ?? 'default';
  const options: ProxyOptions =
    mode === 'offline' ? { offline: true } : mode === 'edge' ? { edgeContract: true } : {};
  return { kind: 'serve', mode, options, variables, flags };
}

/** Our variables that win over an Edge variable of another option when both are set: a flag beats them. */
const OURS_THAT_WIN: Record<string, readonly string[]> = {
  LOG_FORMAT: ['JSON_LOGGER'],
  FEATURES_REFRESH_INTERVAL_SECONDS: ['FLAGS_FETCH_INTERVAL', 'UNLEASH_FETCH_INTERVAL'],
  METRICS_INTERVAL_SECONDS: ['FLAGS_METRICS_INTERVAL', 'UNLEASH_METRICS_INTERVAL'],
  TOKEN_REVALIDATION_INTERVAL_SECONDS: ['FLAGS_TOKEN_REVALIDATE_INTERVAL'],
};

/**
 * The environment a run reads: `env` with the flags' variables laid over it. A flag wins over the
 * environment: the other names of the same option (`FLAGS_API_TOKEN` and `UNLEASH_API_TOKEN` for
 * `--tokens`), which would otherwise win over Edge's name, are left out.
 */
export function environmentWith(env: Env, variables: Record<string, string>): Env {
  const result: Env = { ...env };
  for (const variable of Object.keys(variables)) {
    const spec = PROXY_OPTIONS.find(
      (o) => o.env.includes(variable) || (o.aliases?.env ?? []).includes(variable),
    );
    const others = [...(spec?.env ?? []), ...(spec?.aliases?.env ?? []), ...(OURS_THAT_WIN[variable] ?? [])];
    for (const other of others) if (other !== variable) delete result[other];
  }
  return { ...result, ...variables };
}

/** A start-up problem naming the flag an operator gave rather than the variable it set. */
export function namingFlags(line: string, flags: Record<string, string>): string {
  let named = line;
  for (const [variable, flag] of Object.entries(flags))
    named = named.replace(new RegExp(`(?<![A-Z0-9_])${variable}(?![A-Z0-9_])`, 'g'), flag);
  return named;
}
