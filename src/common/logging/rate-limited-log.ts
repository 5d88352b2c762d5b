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

  warn(message: string, key: string): void {
    this.log('warn', message, key);
  }

  error(message: string, key: string): void {
    this.log('error', message, key);
  }

  private log(level: 'warn' | 'error', message: string, key: string): void {
    const now = Date.now();
    const entry = this.last.get(key);
    if (entry && now - entry.at < this.windowMs) {
      entry.suppressed += 1;
      return;
    }
    if (!entry && this.last.size >= this.maxKeys) this.last.clear();
    const suppressed = entry?.suppressed ?? 0;
    this.last.set(key, { at: now, suppressed: 0 });
    this.logger[level](suppressed > 0 ? `${message} (${suppressed} similar messages suppressed)` : message);
  }
}
