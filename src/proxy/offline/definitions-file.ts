import { promises as fs, readFileSync, statSync, type BigIntStats } from 'node:fs';
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

function tooLarge(size: bigint, maxBytes: number): string {
  return `it is ${size} bytes, above ${OPTION} = ${maxBytes}`;
}

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

/** Reads the file at start, size checked before reading; throws with the reason. */
export function readAtStart(path: string, maxBytes: number): { reading: FileReading; version: string } {
  const stats = statSync(path, { bigint: true });
  if (stats.size > BigInt(maxBytes))
    return { reading: { refused: tooLarge(stats.size, maxBytes) }, version: versionOf(stats) };
  return { reading: interpret(readFileSync(path, 'utf8')), version: versionOf(stats) };
}

/**
 * Reads the file again when its version differs from `known`; undefined when it is unchanged.
 * Never throws: an unreadable file is a refusal naming the reason (its error code).
 */
export async function readIfChanged(
  path: string,
  known: string | undefined,
  maxBytes: number,
): Promise<{ reading: FileReading; version: string } | undefined> {
  let stats: BigIntStats;
  try {
    stats = await fs.stat(path, { bigint: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    const version = `unreadable:${code}`;
    return version === known ? undefined : { reading: { refused: `it cannot be read (${code})` }, version };
  }
  const version = versionOf(stats);
  if (version === known) return undefined;
  if (stats.size > BigInt(maxBytes)) return { reading: { refused: tooLarge(stats.size, maxBytes) }, version };
  try {
    return { reading: interpret(await fs.readFile(path, 'utf8')), version };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return { reading: { refused: `it cannot be read (${code})` }, version: `unreadable:${code}` };
  }
}
