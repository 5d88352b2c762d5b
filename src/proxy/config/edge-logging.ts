import type { LogLevel } from '../../common/logging/logger';

/**
 * Unleash Edge's logging variables: `RUST_LOG` (tracing's filter: a level, or comma-separated
 * `target=level` directives) and `LOG_FORMAT` (`plain`, `pretty` or `json`). Ours, `LOG_LEVEL` and
 * `JSON_LOGGER`, win when both are set (parse-config.ts).
 */

/** The target Edge logs its own lines under; a directive naming it (or one of its modules) applies here. */
const EDGE_TARGET = 'unleash_edge';

/** tracing's level names (case-insensitive, and the digits 0–5) as ours; `trace` is our `debug`, `off` our `fatal`. */
const LEVELS: Record<string, LogLevel> = {
  off: 'fatal',
  error: 'error',
  warn: 'warn',
  info: 'info',
  debug: 'debug',
  trace: 'debug',
  '0': 'fatal',
  '1': 'error',
  '2': 'warn',
  '3': 'info',
  '4': 'debug',
  '5': 'debug',
};

const TARGET = /^[A-Za-z_][A-Za-z0-9_-]*(::[A-Za-z_][A-Za-z0-9_-]*)*$/;

const EXPECTED =
  'expected a level (error, warn, info, debug, trace, off) or comma-separated directives such as `unleash_edge=debug,actix_web=warn`';

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

/**
 * The level `RUST_LOG` gives this program, which logs as one target: the directive for
 * `unleash_edge` (else the first for one of its modules, `unleash_edge::…`), else the plain default
 * part; undefined when neither is given (our default applies). Directives for other targets
 * (`actix_web=warn`) are checked and left aside; span filters (`target[span]=level`) are refused.
 */
export function levelFromRustLog(value: string): Parsed<LogLevel | undefined> {
  let plain: LogLevel | undefined;
  let edge: LogLevel | undefined;
  const directives = value
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '');
  if (directives.length === 0) return { ok: true, value: undefined };
  for (const directive of directives) {
    const eq = directive.indexOf('=');
    const target = eq >= 0 ? directive.slice(0, eq) : directive;
    const levelName = eq >= 0 ? directive.slice(eq + 1).toLowerCase() : undefined;
    const bareLevel = eq < 0 ? LEVELS[directive.toLowerCase()] : undefined;
    if (bareLevel !== undefined) {
      plain = bareLevel;
      continue;
    }
    const edgeTarget = target === EDGE_TARGET || target.startsWith(`${EDGE_TARGET}::`);
    // A bare word is a level, or Edge's own target (every level of it, as tracing reads it); a
    // misspelt level (`warning`, `verbose`) is refused rather than read as a target nobody logs to.
    if (!TARGET.test(target) || (levelName === undefined && !edgeTarget))
      return {
        ok: false,
        problem: `"${directive}" is neither a level nor a target=level directive; ${EXPECTED}`,
      };
    const level = levelName === undefined ? 'debug' : LEVELS[levelName];
    if (level === undefined)
      return { ok: false, problem: `"${levelName ?? ''}" in "${directive}" is not a level; ${EXPECTED}` };
    if (edgeTarget && (target === EDGE_TARGET || edge === undefined)) edge = level;
  }
  return { ok: true, value: edge ?? plain };
}

/** `LOG_FORMAT`: `json` is one JSON object per line; `plain` and `pretty` the human lines. */
export function jsonFromLogFormat(value: string): Parsed<boolean> {
  const format = value.trim().toLowerCase();
  if (format === 'json') return { ok: true, value: true };
  if (format === 'plain' || format === 'pretty') return { ok: true, value: false };
  return { ok: false, problem: 'expected json, plain or pretty' };
}
