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
  /**
   * A line of the process's story (listening, an environment ready, its upstream back, stopping,
   * stopped): written at info level, and shown by the default logger at every level up to `warn`,
   * so the default level tells the story; `error` and `fatal` hide it. A logger without it (a
   * custom one) receives these lines through `info`.
   */
  notice?(msg: string, fields?: Record<string, unknown>): void;
}

/** The level whose methods a logger always has (`notice` is optional). */
export type LevelMethod = Exclude<keyof Logger, 'notice'>;

/** Writes a line of the process's story: `notice` when the logger has it, else `info`. */
export function tell(logger: Logger, msg: string, fields?: Record<string, unknown>): void {
  if (logger.notice) logger.notice(msg, fields);
  else if (fields) logger.info(msg, fields);
  else logger.info(msg);
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
  // The story's lines are info lines that pass a level up to `warn` (the proxy's default).
  const story =
    opts.level === 'error' || opts.level === 'fatal' ? undefined : base.child({}, { level: 'info' });
  const notice = (msg: string, fields?: Record<string, unknown>) => {
    if (!story) return;
    if (fields) story.info(fields, msg);
    else story.info(msg);
  };
  return {
    debug: call('debug'),
    info: call('info'),
    warn: call('warn'),
    error: call('error'),
    fatal: call('fatal'),
    notice,
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
