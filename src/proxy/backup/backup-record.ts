import { createHash } from 'node:crypto';
import type { ClientFeaturesResponse } from 'unleash-client';
import { checkDocument } from '../upstream/definitions-document';

/** One backup of flag definitions as stored (in Redis or a backup file). */
export interface BackupRecord {
  /** SHA-256 of the definitions' JSON: the revision, the same on every replica for the same definitions. */
  digest: string;
  /** Epoch ms when the replica that wrote it accepted these definitions from the upstream. */
  fetchedAt: number;
  definitions: ClientFeaturesResponse;
}

/** What went wrong talking to Redis; `invalid` is a stored value refused as garbage. */
export type BackupFault = 'connection' | 'read' | 'write' | 'invalid';

const FORMAT = 1;

/**
 * How far ahead of this replica's clock a backup's `fetchedAt` may be (the clocks of two replicas
 * differ a little); beyond it the backup is not trusted: its age would read as 0 s for ever.
 */
export const FUTURE_TOLERANCE_MS = 60_000;
/** No backup was written before this: an older `fetchedAt` is garbage. */
const EARLIEST_FETCHED_AT = Date.UTC(2000, 0, 1);

export function digestOf(definitionsJson: string): string {
  return createHash('sha256').update(definitionsJson).digest('hex');
}

/** The stored value, checked as definitions from the upstream are; a string says why it was refused. */
export function parseRecord(raw: string, now = Date.now()): BackupRecord | string {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return 'not JSON';
  }
  if (typeof value !== 'object' || value === null) return 'not an object';
  const { format, digest, fetchedAt, definitions } = value as Record<string, unknown>;
  if (format !== FORMAT) return `unknown format ${JSON.stringify(format)}`;
  if (typeof digest !== 'string' || typeof fetchedAt !== 'number' || !Number.isFinite(fetchedAt)) {
    return 'digest or fetchedAt missing';
  }
  if (fetchedAt > now + FUTURE_TOLERANCE_MS) {
    return `its fetchedAt (${new Date(Math.min(fetchedAt, 8.64e15)).toISOString()}) is in the future`;
  }
  if (fetchedAt < EARLIEST_FETCHED_AT) return 'its fetchedAt is before 2000';
  // the same check as an upstream answer: only what is no definitions document is refused whole
  const checked = checkDocument(definitions);
  if ('refused' in checked) return `malformed definitions (${checked.refused})`;
  if (digestOf(JSON.stringify(definitions)) !== digest) return 'digest does not match the definitions';
  return { digest, fetchedAt, definitions: definitions as ClientFeaturesResponse };
}

/** The stored text of definitions accepted at `fetchedAt`, and the record it stands for. */
export function encodeRecord(
  definitions: ClientFeaturesResponse,
  fetchedAt: number,
): { value: string; record: BackupRecord } {
  const json = JSON.stringify(definitions);
  const digest = digestOf(json);
  const value = `{"format":${FORMAT},"digest":"${digest}","fetchedAt":${fetchedAt},"definitions":${json}}`;
  return { value, record: { digest, fetchedAt, definitions } };
}
