import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  promises as fs,
  readSync,
  type BigIntStats,
  type Stats,
} from 'node:fs';

/** What a file read at start or on reload must be, and how a refusal names its limit. */
export interface CheckedReadOptions {
  /** Largest size accepted; never more than this plus one byte is read. */
  maxBytes: number;
  /** How a refusal names the limit, e.g. `maxStoredDefinitionsBytes (FLAGS_MAX_STORED_DEFINITIONS_BYTES)`. */
  limitName: string;
  /** Refuse a symbolic link at the path itself (for files only this process writes). */
  noFollow?: boolean;
}

/** The bytes of a regular file within its limit, or why it was refused (with what the handle showed). */
export type CheckedRead =
  | { readonly bytes: Buffer; readonly stats: BigIntStats }
  | { readonly refused: string; readonly stats?: BigIntStats; readonly code?: string };

/**
 * Opened without blocking (a FIFO with no writer, a device) and without becoming the controlling
 * terminal; O_NONBLOCK changes nothing for a regular file's reads.
 */
function openFlags(noFollow: boolean | undefined): number {
  const { O_RDONLY, O_NONBLOCK, O_NOCTTY, O_NOFOLLOW } = constants;
  return O_RDONLY | (O_NONBLOCK ?? 0) | (O_NOCTTY ?? 0) | (noFollow ? (O_NOFOLLOW ?? 0) : 0);
}

/** What a path names when it is not a regular file, in words. */
export function kindOf(stats: BigIntStats | Stats): string {
  if (stats.isFile()) return 'a regular file';
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  if (stats.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/** The refusal of what the handle's fstat shows, or undefined when it is a regular file within the limit. */
function checkHandle(stats: BigIntStats, options: CheckedReadOptions): string | undefined {
  if (!stats.isFile()) return `it is ${kindOf(stats)}, not a regular file`;
  if (stats.size > BigInt(options.maxBytes))
    return `it is ${stats.size} bytes, above ${options.limitName} = ${options.maxBytes}`;
  return undefined;
}

/** A file that gives more than its stated size (it grew, or a /proc file stating 0). */
function grew(options: CheckedReadOptions): string {
  return `it reads as more than ${options.maxBytes} bytes, above ${options.limitName} = ${options.maxBytes}`;
}

function failure(err: unknown, noFollow: boolean | undefined): { refused: string; code: string } {
  const code = (err as NodeJS.ErrnoException).code ?? 'error';
  // O_NOFOLLOW on a link: ELOOP (Linux), EMLINK (FreeBSD), EFTYPE (macOS)
  if (noFollow && (code === 'ELOOP' || code === 'EMLINK' || code === 'EFTYPE'))
    return { refused: 'it is a symbolic link, which is never followed here', code };
  return { refused: `it cannot be read (${code})`, code };
}

/**
 * A buffer that reads at most `maxBytes + 1` bytes: sized for the size fstat gave (plus one, to see
 * a file that grew), doubled while the file keeps giving bytes, never past the bound.
 */
class BoundedBuffer {
  private buffer: Buffer;
  length = 0;
  private readonly cap: number;

  constructor(size: bigint, maxBytes: number) {
    this.cap = maxBytes + 1;
    this.buffer = Buffer.allocUnsafe(Math.min(Number(size) + 1, this.cap));
  }

  /** Room for the next read, or undefined when the bound is reached. */
  room(): { buffer: Buffer; offset: number; length: number } | undefined {
    if (this.length === this.buffer.length) {
      if (this.length >= this.cap) return undefined;
      const bigger = Buffer.allocUnsafe(Math.min(this.cap, this.buffer.length * 2));
      this.buffer.copy(bigger, 0, 0, this.length);
      this.buffer = bigger;
    }
    return { buffer: this.buffer, offset: this.length, length: this.buffer.length - this.length };
  }

  over(maxBytes: number): boolean {
    return this.length > maxBytes;
  }

  bytes(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

/**
 * Reads a file once through one handle, at start: opened without blocking, checked on the handle
 * (a regular file within `maxBytes`), read with a bounded read. Never throws for the file's sake.
 */
export function readCheckedSync(path: string, options: CheckedReadOptions): CheckedRead {
  let fd: number;
  try {
    fd = openSync(path, openFlags(options.noFollow));
  } catch (err) {
    return failure(err, options.noFollow);
  }
  try {
    const stats = fstatSync(fd, { bigint: true });
    const refused = checkHandle(stats, options);
    if (refused !== undefined) return { refused, stats };
    const into = new BoundedBuffer(stats.size, options.maxBytes);
    for (let room = into.room(); room; room = into.room()) {
      const n = readSync(fd, room.buffer, room.offset, room.length, null);
      if (n === 0) break;
      into.length += n;
    }
    if (into.over(options.maxBytes)) return { refused: grew(options), stats };
    return { bytes: into.bytes(), stats };
  } catch (err) {
    return failure(err, options.noFollow);
  } finally {
    closeSync(fd);
  }
}

/** `readCheckedSync` without blocking the event loop: for reloads and reads while serving. */
export async function readChecked(path: string, options: CheckedReadOptions): Promise<CheckedRead> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(path, openFlags(options.noFollow));
  } catch (err) {
    return failure(err, options.noFollow);
  }
  try {
    const stats = await handle.stat({ bigint: true });
    const refused = checkHandle(stats, options);
    if (refused !== undefined) return { refused, stats };
    const into = new BoundedBuffer(stats.size, options.maxBytes);
    for (let room = into.room(); room; room = into.room()) {
      const { bytesRead } = await handle.read(room.buffer, room.offset, room.length, null);
      if (bytesRead === 0) break;
      into.length += bytesRead;
    }
    if (into.over(options.maxBytes)) return { refused: grew(options), stats };
    return { bytes: into.bytes(), stats };
  } catch (err) {
    return failure(err, options.noFollow);
  } finally {
    await handle.close().catch(() => undefined);
  }
}
