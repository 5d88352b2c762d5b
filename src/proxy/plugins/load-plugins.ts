import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Strategy } from 'unleash-client';
import { defaultStrategies } from '../upstream/sdk/modules';
import { ConfigError } from '../../common/config/resolve';
import type { ContextEnricher } from '../config/types';

interface PluginKind {
  /** Names the option in messages, code name and environment variable. */
  option: string;
  /** What one entry must be, e.g. "strategy instance (an object with a name and an isEnabled method)". */
  entry: string;
  /** Returns what is wrong with one exported entry, or undefined when it is fine. */
  problem(value: unknown): string | undefined;
  /** How a correct file ends, shown in the message when the export has the wrong shape. */
  example: string;
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'object') {
    const ctor = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return Object.keys(value).length === 0 && ctor === 'Object'
      ? 'an empty object (did the file forget module.exports?)'
      : `an object${typeof ctor === 'string' && ctor !== 'Object' ? ` of class ${ctor}` : ''}`;
  }
  return `${typeof value} ${JSON.stringify(value)}`;
}

/** Requires a plugin file; relative paths resolve against the working directory. */
function requireFile(file: string, kind: PluginKind): { resolved: string; exported: unknown } {
  const resolved = path.resolve(process.cwd(), file);
  const fail = (what: string) => new ConfigError([`${kind.option}: ${resolved}: ${what}`]);
  if (!existsSync(resolved) && !existsSync(`${resolved}.js`)) {
    throw fail(`file not found (relative paths resolve against the working directory ${process.cwd()})`);
  }
  let loaded: unknown;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- plugins are files named at run time
    loaded = require(resolved) as unknown;
  } catch (err) {
    const reason = err instanceof Error ? `${err.name}: ${err.message.split('\n')[0]}` : String(err);
    throw fail(`the file threw while loading: ${reason}`);
  }
  // `export default [...]` (an ES module, or one compiled to CommonJS) is accepted too.
  const hasDefault =
    typeof loaded === 'object' && loaded !== null && !Array.isArray(loaded) && 'default' in loaded;
  return { resolved, exported: hasDefault ? (loaded as { default: unknown }).default : loaded };
}

function loadList<T>(entries: ReadonlyArray<string | T>, kind: PluginKind): T[] {
  const result: T[] = [];
  for (const entry of entries) {
    if (typeof entry !== 'string') {
      const problem = kind.problem(entry);
      if (problem !== undefined) {
        throw new ConfigError([`${kind.option}: an entry given in code ${problem}`]);
      }
      result.push(entry);
      continue;
    }
    const { resolved, exported } = requireFile(entry, kind);
    const fail = (what: string) =>
      new ConfigError([`${kind.option}: ${resolved}: ${what}. A correct file ends with ${kind.example}`]);
    if (!Array.isArray(exported)) {
      const single = kind.problem(exported) === undefined ? ' (a single one; wrap it in an array)' : '';
      throw fail(`must export an array of ${kind.entry}s, but exports ${describeValue(exported)}${single}`);
    }
    exported.forEach((item: unknown, index) => {
      const problem = kind.problem(item);
      if (problem !== undefined) throw fail(`entry ${index} of the exported array ${problem}`);
    });
    result.push(...(exported as T[]));
  }
  return result;
}

const BUILT_IN_STRATEGIES = new Set(defaultStrategies.map((s) => s.name));

const strategyKind: PluginKind = {
  option: 'customStrategies (FLAGS_CUSTOM_STRATEGIES_FILE)',
  entry: 'strategy instance',
  example:
    "`module.exports = [new MyStrategy()]` where `class MyStrategy extends Strategy` from 'unleash-client'",
  problem(value) {
    if (typeof value !== 'object' || value === null) {
      return `is ${describeValue(value)}, not a strategy instance (did you export the class instead of \`new MyStrategy()\`?)`;
    }
    const { name, isEnabled, getResult } = value as Partial<Strategy>;
    if (typeof name !== 'string' || name.trim() === '') {
      return 'has no name (call super("myStrategy") in its constructor)';
    }
    if (typeof isEnabled !== 'function') return `("${name}") has no isEnabled(parameters, context) method`;
    if (typeof getResult !== 'function') {
      return `("${name}") is not built on the SDK's Strategy class; extend Strategy from 'unleash-client'`;
    }
    return undefined;
  },
};

const enricherKind: PluginKind = {
  option: 'expCustomEnrichers (EXP_CUSTOM_ENRICHERS_FILE)',
  entry: 'enricher function',
  example:
    '`module.exports = [(context, request) => ({ ...context, properties: { ...context.properties } })]`',
  problem(value) {
    return typeof value === 'function'
      ? undefined
      : `is ${describeValue(value)}, not a function (context, request) => context`;
  },
};

/**
 * Custom strategy instances from files and code (FLAGS_CUSTOM_STRATEGIES_FILE / customStrategies).
 * Throws a ConfigError naming the file and what is wrong: missing, throwing on load, wrong export,
 * a name clashing with a built-in strategy (which the SDK would silently prefer) or with another
 * custom strategy.
 */
export function loadStrategies(entries: ReadonlyArray<string | Strategy>): Strategy[] {
  const strategies = loadList(entries, strategyKind);
  const seen = new Set<string>();
  for (const strategy of strategies) {
    if (BUILT_IN_STRATEGIES.has(strategy.name)) {
      throw new ConfigError([
        `${strategyKind.option}: custom strategy "${strategy.name}" has the name of a built-in strategy; give it another name`,
      ]);
    }
    if (seen.has(strategy.name)) {
      throw new ConfigError([
        `${strategyKind.option}: two custom strategies are named "${strategy.name}"; strategy names must be unique`,
      ]);
    }
    seen.add(strategy.name);
  }
  return strategies;
}

/** Custom context enrichers from files and code (EXP_CUSTOM_ENRICHERS_FILE / expCustomEnrichers), in order. */
export function loadEnrichers(entries: ReadonlyArray<string | ContextEnricher>): ContextEnricher[] {
  return loadList(entries, enricherKind);
}
