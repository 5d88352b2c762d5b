import { ConfigError } from '../../common/config/resolve';
import type { ProxyOptions } from '../config/types';

/** Unleash Edge's `offline` flags, long and short, and the option each sets. */
const FLAGS: Record<string, 'bootstrapFile' | 'clientTokens' | 'frontendTokens' | 'reloadInterval'> = {
  '--bootstrap-file': 'bootstrapFile',
  '-b': 'bootstrapFile',
  '--client-tokens': 'clientTokens',
  '-c': 'clientTokens',
  '--frontend-tokens': 'frontendTokens',
  '-f': 'frontendTokens',
  '--reload-interval': 'reloadInterval',
  '-r': 'reloadInterval',
};

const USAGE =
  'usage: flags-proxy [offline [--bootstrap-file <file>] [--client-tokens <t,…>] [--frontend-tokens <t,…>] [--reload-interval <seconds>]]';

/**
 * The program's arguments as options: none (configuration from the environment), or Unleash Edge's
 * `offline` subcommand with its flags (each also read from its variable; a flag wins). Token flags
 * may repeat. Anything else stops start-up naming it.
 */
export function optionsFromArguments(args: readonly string[]): ProxyOptions {
  if (args.length === 0) return {};
  const [command, ...rest] = args;
  if (command !== 'offline') throw new ConfigError([`Unknown command ${JSON.stringify(command)}; ${USAGE}`]);
  const options: ProxyOptions & { clientTokens?: string[]; frontendTokens?: string[] } = {
    offline: true,
  };
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const key = Object.hasOwn(FLAGS, flag) ? FLAGS[flag] : undefined;
    if (key === undefined) throw new ConfigError([`Unknown argument ${JSON.stringify(flag)}; ${USAGE}`]);
    const value = eq > 0 ? arg.slice(eq + 1) : rest[++i];
    if (value === undefined) throw new ConfigError([`${flag} needs a value; ${USAGE}`]);
    if (key === 'clientTokens' || key === 'frontendTokens')
      options[key] = [...(options[key] ?? []), ...value.split(',')];
    else if (key === 'reloadInterval') {
      if (!/^\d+$/.test(value)) throw new ConfigError([`${flag} must be a whole number of seconds`]);
      options.reloadInterval = Number(value);
    } else options.bootstrapFile = value;
  }
  return options;
}
