import { promises as fs, type BigIntStats } from 'node:fs';
import { readChecked, readCheckedSync, type CheckedRead } from '../../common/files/checked-read';
import { checkDocument } from '../upstream/definitions-document';
import type { ApiResponse } from '../upstream/sdk/types';
import { isSimpleFormat, simpleToClientFeatures } from './simple-format';

/** What one read of the offline file gave: definitions to serve, or why there are none. */
export type FileReading =
  | {
      readonly definitions: ApiResponse;
      readonly format: 'client API' | 'simple';
      readonly toggles: number;
      /** Entries the SDK cannot store, dropped alone (as from an upstream answer). */
      readonly dropped: readonly string[];
    }
  | { readonly refused: string };

/** Identity of one version of the file: a different one is read again. */
export function versionOf(stats: BigIntStats): string {
  return `${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
}

const OPTION = 'maxStoredDefinitionsBytes (FLAGS_MAX_STORED_DEFINITIONS_BYTES)';

/**
 * The definitions of a file's text, as Unleash Edge reads it: the simple format first, else the
 * client API's; then the same document check as an upstream answer (only what is no definitions
 * document is refused whole; quarantine of single toggles happens where every revision is checked).
 */
export function interpret(text: string): FileReading {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { refused: 'it is not JSON' };
  }
  const simple = isSimpleFormat(value);
  const checked = checkDocument(isSimpleFormat(value) ? simpleToClientFeatures(value) : value);
  if ('refused' in checked) {
    return { refused: `it is neither the client API's format (${checked.refused}) nor the simple format` };
  }
  const toggles = checked.accepted.type === 'full' ? checked.accepted.features.length : 0;
  return {
    definitions: checked.accepted,
    format: simple ? 'simple' : 'client API',
    toggles,
    dropped: checked.dropped,
  };
}

function readingOf(read: CheckedRead): FileReading {
  return 'refused' in read ? { refused: read.refused } : interpret(read.bytes.toString('utf8'));
}

/** The version of what a read saw: the handle's identity, or the reason it could not be opened. */
function versionOfRead(read: CheckedRead): string {
  if (read.stats) return versionOf(read.stats);
  return `unreadable:${'code' in read ? (read.code ?? 'error') : 'error'}`;
}

/**
 * Reads the file at start, through one handle checked before reading (`common/files/checked-read`):
 * a FIFO, a device or a file above the limit is refused, never read.
 */
export function readAtStart(path: string, maxBytes: number): { reading: FileReading; version: string } {
  const read = readCheckedSync(path, { maxBytes, limitName: OPTION });
  return { reading: readingOf(read), version: versionOfRead(read) };
}

/**
 * Reads the file again when what its path names differs from `known`; undefined when it is
 * unchanged (one refusal per change, however many ticks). Never throws.
 */
export async function readIfChanged(
  path: string,
  known: string | undefined,
  maxBytes: number,
): Promise<{ reading: FileReading; version: string } | undefined> {
  let version: string;
  try {
    version = versionOf(await fs.stat(path, { bigint: true }));
  } catch (err) {
    version = `unreadable:${(err as NodeJS.ErrnoException).code ?? 'error'}`;
  }
  if (version === known) return undefined;
  const read = await readChecked(path, { maxBytes, limitName: OPTION });
  // a path that stats but cannot be opened (EACCES) keeps the version its stat gave: one line, not one per tick
  return { reading: readingOf(read), version: read.stats ? versionOf(read.stats) : version };
}
