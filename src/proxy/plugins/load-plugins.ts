import path from 'node:path';
import type { Strategy } from 'unleash-client';
import { ConfigError } from '../../common/config/resolve';
import type { ContextEnricher } from '../config/types';

/** Loads a JavaScript file (relative paths resolve against the working directory) and returns its export. */
function loadFile(file: string, option: string): unknown {
  const resolved = path.resolve(process.cwd(), file);
  let loaded: unknown;
  try {
    loaded = require(resolved) as unknown;
  } catch (err) {
    const reason =
      (err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' &&
      String((err as Error).message).includes(resolved)
        ? 'file not found'
        : `it threw while loading: ${err instanceof Error ? err.message : String(err)}`;
    throw new ConfigError([`${option}: cannot load ${resolved}: ${reason}`]);
  }
  const value = (loaded as { default?: unknown } | null)?.default ?? loaded;
  return value;
}

function loadList<T>(
  entries: ReadonlyArray<string | T>,
  option: string,
  check: (v: unknown) => v is T,
  shape: string,
): T[] {
  const result: T[] = [];
  for (const entry of entries) {
    if (typeof entry !== 'string') {
      result.push(entry);
      continue;
    }
    const exported = loadFile(entry, option);
    const list = Array.isArray(exported) ? exported : undefined;
    const bad = list?.findIndex((item) => !check(item));
    if (!list || (bad !== undefined && bad >= 0)) {
      const where = list ? ` (entry ${bad} is not one)` : '';
      throw new ConfigError([
        `${option}: ${path.resolve(process.cwd(), entry)} must export an array of ${shape}${where}`,
      ]);
    }
    result.push(...(list as T[]));
  }
  return result;
}

const isStrategy = (v: unknown): v is Strategy =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as Strategy).name === 'string' &&
  typeof (v as Strategy).isEnabled === 'function';

/** Custom strategy instances from files and code (FLAGS_CUSTOM_STRATEGIES_FILE / customStrategies). */
export function loadStrategies(entries: ReadonlyArray<string | Strategy>): Strategy[] {
  return loadList(
    entries,
    'FLAGS_CUSTOM_STRATEGIES_FILE',
    isStrategy,
    'strategy instances (objects with a name and isEnabled)',
  );
}

/** Custom context enrichers from files and code (EXP_CUSTOM_ENRICHERS_FILE / expCustomEnrichers). */
export function loadEnrichers(entries: ReadonlyArray<string | ContextEnricher>): ContextEnricher[] {
  return loadList(
    entries,
    'EXP_CUSTOM_ENRICHERS_FILE',
    (v): v is ContextEnricher => typeof v === 'function',
    'functions (context, request) => context',
  );
}
