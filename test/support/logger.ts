import type { Logger } from '../../src/common/logging/logger';

export interface LogLine {
  level: keyof Logger;
  msg: string;
}

/** A logger that keeps every line, for assertions on what a program reported. */
export function capturingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at = (level: keyof Logger) => (msg: string) => void lines.push({ level, msg });
  return {
    lines,
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    fatal: at('fatal'),
  };
}
