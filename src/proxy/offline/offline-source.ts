import { ConfigError } from '../../common/config/resolve';
import type { Logger } from '../../common/logging/logger';
import type { DefinitionsSource } from '../upstream/definitions-source';
import type { ApiResponse } from '../upstream/sdk/types';
import { readAtStart, readIfChanged, type FileReading } from './definitions-file';
import { timerDelay } from '../../common/timers/timer-delay';

export interface OfflineFileOptions {
  path: string;
  /** 0: read once, at start. */
  reloadIntervalMs: number;
  maxBytes: number;
  logger: Logger;
}

/** Entries named one by one in a log line; the rest are counted. */
const MAX_NAMED = 20;

/**
 * Offline mode's definitions: the file, read at start (a file that cannot be served stops start-up,
 * as in Unleash Edge) and, with a reload interval, again whenever it changed. A changed file that
 * cannot be served leaves the last good definitions in use with one error line per change.
 */
export class OfflineFileSource implements DefinitionsSource {
  private version: string | undefined;
  private first: ApiResponse | undefined;
  private timer: NodeJS.Timeout | undefined;
  private reading = false;
  private closed = false;

  constructor(private readonly options: OfflineFileOptions) {
    // opened once without blocking and checked on the handle: a FIFO or a device never stalls start-up
    const read = readAtStart(options.path, options.maxBytes);
    const { reading } = read;
    if ('refused' in reading) {
      const unreadable = /^it (cannot be read \(.*\))$/.exec(reading.refused);
      throw new ConfigError([
        unreadable
          ? `Offline mode: BOOTSTRAP_FILE ${options.path} ${unreadable[1]}`
          : `Offline mode: BOOTSTRAP_FILE ${options.path} cannot be served: ${reading.refused}`,
      ]);
    }
    this.version = read.version;
    this.first = reading.definitions;
    this.accepted(reading, 'serving');
  }

  start(deliver: (definitions: ApiResponse) => Promise<void>): void {
    const first = this.first;
    this.first = undefined;
    if (first) void deliver(first).catch((err: unknown) => this.failed(err));
    if (this.options.reloadIntervalMs <= 0) return;
    this.timer = setInterval(() => void this.reload(deliver), timerDelay(this.options.reloadIntervalMs));
    this.timer.unref();
  }

  private async reload(deliver: (definitions: ApiResponse) => Promise<void>): Promise<void> {
    if (this.reading || this.closed) return;
    this.reading = true;
    try {
      const read = await readIfChanged(this.options.path, this.version, this.options.maxBytes);
      if (!read || this.closed) return;
      this.version = read.version;
      const { reading } = read;
      if ('refused' in reading) {
        this.options.logger.error(
          `Offline mode: BOOTSTRAP_FILE ${this.options.path} changed but cannot be served: ${reading.refused}; keeping the last good definitions`,
        );
        return;
      }
      await deliver(reading.definitions);
      this.accepted(reading, 'reloaded');
    } catch (err) {
      this.failed(err);
    } finally {
      this.reading = false;
    }
  }

  /** The repository could not take definitions (not expected): logged, the process goes on. */
  private failed(err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    this.options.logger.error(
      `Offline mode: the definitions of BOOTSTRAP_FILE could not be applied: ${message}`,
    );
  }

  private accepted(reading: Exclude<FileReading, { refused: string }>, what: string): void {
    const { logger, path } = this.options;
    logger.info(
      `Offline mode: ${what} ${reading.toggles} toggles from BOOTSTRAP_FILE ${path} (${reading.format} format)`,
    );
    if (reading.dropped.length === 0) return;
    const shown = reading.dropped.slice(0, MAX_NAMED).join('; ');
    const more = reading.dropped.length > MAX_NAMED ? ` and ${reading.dropped.length - MAX_NAMED} more` : '';
    logger.warn(
      `Offline mode: BOOTSTRAP_FILE ${path}: entries the SDK cannot store were dropped: ${shown}${more}`,
    );
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
  }
}
