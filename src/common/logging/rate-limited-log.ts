import type { Logger } from './logger';

/**
 * Logs a message at most once per key per window, so a fault that repeats on every request or poll
 * does not flood the log. The number of suppressed repeats is reported with the next line.
 */
export class RateLimitedLog {
  private readonly last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly logger: Logger,
    private readonly windowMs: number,
    private readonly maxKeys = 1000,
  ) {}

  /** Logs unless a line of this key was logged within the window; answers whether it logged. */
  warn(message: string, key: string, fields?: Record<string, unknown>): boolean {
    return this.log('warn', message, key, fields);
  }

  error(message: string, key: string, fields?: Record<string, unknown>): boolean {
    return this.log('error', message, key, fields);
  }

  private log(
    level: 'warn' | 'error',
    message: string,
    key: string,
    fields?: Record<string, unknown>,
  ): boolean {
    const now = Date.now();
    const entry = this.last.get(key);
    if (entry && now - entry.at < this.windowMs) {
      entry.suppressed += 1;
      return false;
    }
    if (!entry && this.last.size >= this.maxKeys) this.last.clear();
    const suppressed = entry?.suppressed ?? 0;
    this.last.set(key, { at: now, suppressed: 0 });
    const line = suppressed > 0 ? `${message} (${suppressed} similar messages suppressed)` : message;
    if (fields) this.logger[level](line, fields);
    else this.logger[level](line);
    return true;
  }
}
