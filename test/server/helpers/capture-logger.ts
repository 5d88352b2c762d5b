import type { Logger, LogLevel } from '../../../src/common/logging/logger';

export type LogLine = { level: LogLevel; msg: string; fields?: Record<string, unknown> };

/** A logger that keeps every line, to assert on what a request logged (and at which level). */
export function captureLogger(): Logger & { lines: LogLine[]; at(level: LogLevel): LogLine[] } {
  const lines: LogLine[] = [];
  const at = (level: LogLevel) => (msg: string, fields?: Record<string, unknown>) => {
    lines.push({ level, msg, fields });
  };
  return {
    lines,
    at: (level) => lines.filter((l) => l.level === level),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    fatal: at('fatal'),
  };
}
