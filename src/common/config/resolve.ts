import { ParseError, type Parser } from './parsers';
import { redactCredentialPositions } from '../logging/secret-redactor';

/** One configuration option, declared once: code name, variables, default, parser and doc line. */
export interface OptionSpec<T = unknown> {
  /** Name in code; dotted for nested options, e.g. `cors.origin`. */
  key: string;
  /** Environment variables, first one wins. Empty for code-only options. */
  env: readonly string[];
  /**
   * Other names of the same option, read when none of ours is given: the reference Unleash
   * proxy's, so its configuration works unchanged. `env` aliases lose to every name in `env`;
   * `code` aliases lose to `key` and win over the environment, as every code option does.
   */
  aliases?: { env?: readonly string[]; code?: readonly string[] };
  parse: Parser<T>;
  default?: T;
  /** Shown in the docs/.env.example table when the default is computed or not a plain value. */
  defaultDoc?: string;
  required?: boolean;
  /**
   * Largest value a numeric option accepts (every interval and timeout has one: a timer holds at
   * most 2^31-1 ms); a larger one stops start-up naming the variable and this bound.
   */
  max?: number;
  /** How the maximum reads in messages and the option table, e.g. `86400 (1 day)`. */
  maxDoc?: string;
  /** Secret values are never echoed in messages or logs. */
  secret?: boolean;
  /** Code-only value (object, function, logger…) that is passed through untouched. */
  codeOnly?: boolean;
  doc: string;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function readPath(options: object, key: string): unknown {
  let value: unknown = options;
  for (const part of key.split('.')) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** How a missing option is named: `clientKeys (FLAGS_PROXY_CLIENT_KEYS)`, `flagsUrl: FLAGS_URL (or UNLEASH_URL)`. */
export function describeOption(spec: OptionSpec): string {
  if (spec.env.length === 0) return spec.key;
  const envNames = spec.env.join(' or ');
  const envAliases = spec.aliases?.env ?? [];
  if (envAliases.length === 0) return `${spec.key} (${envNames})`;
  return `${spec.key}: ${envNames} (or ${envAliases.join(' or ')})`;
}

/** The problem line naming every missing required option; undefined when none is missing. */
export function missingLine(missing: readonly OptionSpec[]): string | undefined {
  if (missing.length === 0) return undefined;
  return `Missing required configuration: ${missing.map(describeOption).join(', ')}`;
}

/** Where a resolved value came from: our code name or variable, or one of the option's aliases. */
export interface OptionSource {
  /** The name the value was read under: a code option (`unleashUrl`) or a variable (`UNLEASH_URL`). */
  name: string;
  from: 'code' | 'env';
  alias: boolean;
}

type Resolved = { values: Map<string, unknown>; problems: string[]; missing: OptionSpec[] };

function findSource(spec: OptionSpec, options: object, env: Env): OptionSource | undefined {
  const given = (name: string) => env[name] !== undefined && env[name] !== '';
  if (readPath(options, spec.key) !== undefined) return { name: spec.key, from: 'code', alias: false };
  const codeAlias = spec.aliases?.code?.find((name) => readPath(options, name) !== undefined);
  if (codeAlias !== undefined) return { name: codeAlias, from: 'code', alias: true };
  const envName = spec.env.find(given);
  if (envName !== undefined) return { name: envName, from: 'env', alias: false };
  const envAlias = spec.aliases?.env?.find(given);
  if (envAlias !== undefined) return { name: envAlias, from: 'env', alias: true };
  return undefined;
}

/**
 * Resolves every option with precedence code > environment > default (within each, our name over
 * an alias), collecting all problems so that one start-up error names every missing or malformed
 * option together. `sources` says which name each given value was read under.
 */
export function resolveOptions(
  specs: readonly OptionSpec[],
  options: object,
  env: Env,
): Resolved & { sources: Map<string, OptionSource> } {
  const values = new Map<string, unknown>();
  const sources = new Map<string, OptionSource>();
  const missing: OptionSpec[] = [];
  const problems: string[] = [];
  for (const spec of specs) {
    const source = findSource(spec, options, env);
    let value: unknown = spec.default;
    try {
      if (source?.from === 'code') {
        const fromCode = readPath(options, source.name);
        value = spec.codeOnly ? fromCode : spec.parse(fromCode);
      } else if (source?.from === 'env') {
        value = spec.parse(env[source.name]);
      }
    } catch (err) {
      if (!(err instanceof ParseError)) throw err;
      problems.push(`Invalid ${invalidName(spec, source as OptionSource, env)}: ${err.message}`);
      continue;
    }
    if (source !== undefined && typeof value === 'number' && spec.max !== undefined && value > spec.max) {
      problems.push(`Invalid ${invalidName(spec, source, env)}: must be at most ${maxOf(spec)}`);
      continue;
    }
    if (source !== undefined) sources.set(spec.key, source);
    if (value === undefined && spec.required) missing.push(spec);
    values.set(spec.key, value);
  }
  const line = missingLine(missing);
  if (line !== undefined) problems.unshift(line);
  return { values, problems, missing, sources };
}

/** The bound of an option with a maximum as messages and tables show it. */
export function maxOf(spec: OptionSpec): string {
  return spec.maxDoc ?? String(spec.max);
}

/** `FLAGS_URL="x"`, `UNLEASH_URL="x" (alias of FLAGS_URL)`, `option unleashUrl (alias of flagsUrl)`; secrets unshown. */
function invalidName(spec: OptionSpec, source: OptionSource, env: Env): string {
  const aliasOf = source.alias ? ` (alias of ${source.from === 'code' ? spec.key : spec.env[0]})` : '';
  if (source.from === 'code') return `option ${source.name}${aliasOf}`;
  // A URL that does not parse may still carry a password: its userinfo is never shown.
  const shown = spec.secret ? '' : `=${redactCredentialPositions(JSON.stringify(env[source.name]))}`;
  return `${source.name}${shown}${aliasOf}`;
}
