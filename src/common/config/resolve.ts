import { ParseError, type Parser } from './parsers';

/** One configuration option, declared once: code name, variables, default, parser and doc line. */
export interface OptionSpec<T = unknown> {
  /** Name in code; dotted for nested options, e.g. `cors.origin`. */
  key: string;
  /** Environment variables, first one wins. Empty for code-only options. */
  env: readonly string[];
  parse: Parser<T>;
  default?: T;
  /** Shown in the README/.env.example table when the default is computed or not a plain value. */
  defaultDoc?: string;
  required?: boolean;
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

function describe(spec: OptionSpec): string {
  return spec.env.length > 0 ? `${spec.key} (${spec.env.join(' or ')})` : spec.key;
}

/**
 * Resolves every option with precedence code > environment > default, collecting all problems so
 * that one start-up error names every missing or malformed option together.
 */
export function resolveOptions(
  specs: readonly OptionSpec[],
  options: object,
  env: Env,
): { values: Map<string, unknown>; problems: string[] } {
  const values = new Map<string, unknown>();
  const missing: string[] = [];
  const problems: string[] = [];
  for (const spec of specs) {
    const fromCode = readPath(options, spec.key);
    const envName = spec.env.find((name) => env[name] !== undefined && env[name] !== '');
    let value: unknown = spec.default;
    try {
      if (fromCode !== undefined) {
        value = spec.codeOnly ? fromCode : spec.parse(fromCode);
      } else if (envName !== undefined) {
        value = spec.parse(env[envName]);
      }
    } catch (err) {
      if (!(err instanceof ParseError)) throw err;
      const source = fromCode !== undefined ? `option ${spec.key}` : `${envName}`;
      const shown = spec.secret || fromCode !== undefined ? '' : `=${JSON.stringify(env[envName as string])}`;
      problems.push(`Invalid ${source}${shown}: ${err.message}`);
      continue;
    }
    if (value === undefined && spec.required) missing.push(describe(spec));
    values.set(spec.key, value);
  }
  if (missing.length > 0) problems.unshift(`Missing required configuration: ${missing.join(', ')}`);
  return { values, problems };
}
