import pino from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'fatal';
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'fatal'];

/**
 * The logger interface both programs use and users may supply in code (`logger` option).
 * Each method takes a message and optional structured fields.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  fatal(msg: string, fields?: Record<string, unknown>): void;
}

export interface LoggerOptions {
  level: LogLevel;
  json: boolean;
  name: string;
  /** Where lines go; stdout by default. Tests pass a capture stream. */
  destination?: NodeJS.WritableStream;
}

const SECRET_FIELDS = [
  'authorization',
  'headers.authorization',
  '*.authorization',
  '*.headers.authorization',
  'flagsApiToken',
  'clientKeys',
  'proxySecrets',
];

const LEVEL_NAMES: Record<number, string> = { 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** Writes "2026-01-01T00:00:00.000Z WARN flags-proxy: message {fields}" lines. */
function simpleStream(dest: NodeJS.WritableStream): { write(line: string): void } {
  return {
    write(line: string) {
      const { time, level, name, msg, ...fields } = JSON.parse(line) as Record<string, unknown>;
      delete fields.pid;
      delete fields.hostname;
      const extra = Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : '';
      const when = new Date(typeof time === 'number' ? time : Date.now()).toISOString();
      dest.write(
        `${when} ${LEVEL_NAMES[level as number] ?? String(level)} ${String(name)}: ${String(msg)}${extra}\n`,
      );
    },
  };
}

/** Builds the default logger: simple human-readable lines, or one-line JSON. */
export function createLogger(opts: LoggerOptions): Logger {
  const dest = opts.destination ?? process.stdout;
  const base = pino(
    {
      name: opts.name,
      level: opts.level,
      base: { name: opts.name },
      timestamp: pino.stdTimeFunctions.epochTime,
      // Defence in depth: credentials passed as structured fields never reach a line.
      redact: { paths: SECRET_FIELDS, censor: '[redacted]' },
    },
    opts.json ? (dest as pino.DestinationStream) : simpleStream(dest),
  );
  const call = (level: LogLevel) => (msg: string, fields?: Record<string, unknown>) =>
    fields ? base[level](fields, msg) : base[level](msg);
  return {
    debug: call('debug'),
    info: call('info'),
    warn: call('warn'),
    error: call('error'),
    fatal: call('fatal'),
  };
}

/** A logger that drops everything; handy default for embedded use in tests. */
export const silentLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  fatal: () => undefined,
};
