import { createHash } from 'node:crypto';
import type { ClientFeaturesResponse } from 'unleash-client';
import { checkDocument } from '../upstream/definitions-document';
import { checkStoredTokens, type StoredToken } from './stored-tokens';

/**
 * Whose definitions a record holds: the upstream token's environment and projects (`backup-scope.ts`;
 * for a `[]:` token its slow digest). A record is only ever read by a backup of the same scope.
 */
export interface RecordScope {
  readonly environment: string;
  readonly projects: string;
}

/** One backup of flag definitions as stored (in Redis or a backup file). */
export interface BackupRecord {
  /** SHA-256 of the record's scope, fetch time, tokens and definitions: what a reader checks. */
  digest: string;
  /** Epoch ms when the replica that wrote it accepted these definitions from the upstream. */
  fetchedAt: number;
  scope: RecordScope;
  /** Tokens the upstream confirmed, as digests with their scope (never the secrets). */
  tokens: StoredToken[];
  definitions: ClientFeaturesResponse;
}

/** A stored value that is not served, and why; `foreign`: a whole record of another scope. */
export interface Refusal {
  readonly refused: string;
  readonly foreign: boolean;
}

/** What went wrong talking to Redis; `invalid` is a stored value refused as garbage. */
export type BackupFault = 'connection' | 'read' | 'write' | 'invalid';

const FORMAT = 2;

/**
 * How far ahead of this replica's clock a backup's `fetchedAt` may be (the clocks of two replicas
 * differ a little); beyond it the backup is not trusted: its age would read as 0 s for ever.
 */
export const FUTURE_TOLERANCE_MS = 60_000;
/** No backup was written before this: an older `fetchedAt` is garbage. */
const EARLIEST_FETCHED_AT = Date.UTC(2000, 0, 1);

/** The head of a record: everything but its definitions, in the order it is written and digested. */
function headOf(scope: RecordScope, fetchedAt: number, tokens: readonly StoredToken[]): string {
  const scopeJson = JSON.stringify({ environment: scope.environment, projects: scope.projects });
  return `"scope":${scopeJson},"fetchedAt":${fetchedAt},"tokens":${JSON.stringify(tokens)}`;
}

/** The digest a record carries: of its head (scope, fetch time, tokens) and its definitions' JSON. */
export function recordDigest(head: string, definitionsJson: string): string {
  return createHash('sha256').update(head).update('\n').update(definitionsJson).digest('hex');
}

function describeScope(scope: RecordScope): string {
  const projects = scope.projects.startsWith('[]')
    ? 'the projects of a [] token'
    : `projects ${scope.projects}`;
  return `environment ${JSON.stringify(scope.environment.slice(0, 64))}, ${projects.slice(0, 200)}`;
}

function isScope(value: unknown): value is RecordScope {
  if (typeof value !== 'object' || value === null) return false;
  const { environment, projects } = value as Record<string, unknown>;
  return typeof environment === 'string' && typeof projects === 'string';
}

/**
 * The stored value, checked as definitions from the upstream are and against the reader's `scope`.
 * Tokens it holds that cannot be served (malformed, another environment) are left out and named
 * in `ignoredTokens`; the definitions are still used.
 */
export function parseRecord(
  raw: string,
  scope: RecordScope,
  now = Date.now(),
): { record: BackupRecord; ignoredTokens: string | undefined } | Refusal {
  const refuse = (refused: string, foreign = false): Refusal => ({ refused, foreign });
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return refuse('not JSON');
  }
  if (typeof value !== 'object' || value === null) return refuse('not an object');
  const fields = value as Record<string, unknown>;
  const { format, digest, fetchedAt, definitions, tokens } = fields;
  if (format !== FORMAT)
    return refuse(
      format === 1
        ? 'it names no scope (written by an earlier version); it is replaced at the next write'
        : `unknown format ${JSON.stringify(format)}`,
    );
  if (typeof digest !== 'string' || typeof fetchedAt !== 'number' || !Number.isFinite(fetchedAt)) {
    return refuse('digest or fetchedAt missing');
  }
  if (!isScope(fields.scope) || !Array.isArray(tokens)) return refuse('scope or tokens missing');
  if (fetchedAt > now + FUTURE_TOLERANCE_MS) {
    return refuse(`its fetchedAt (${new Date(Math.min(fetchedAt, 8.64e15)).toISOString()}) is in the future`);
  }
  if (fetchedAt < EARLIEST_FETCHED_AT) return refuse('its fetchedAt is before 2000');
  // the same check as an upstream answer: only what is no definitions document is refused whole
  const checked = checkDocument(definitions);
  if ('refused' in checked) return refuse(`malformed definitions (${checked.refused})`);
  const head = headOf(fields.scope, fetchedAt, tokens as StoredToken[]);
  if (recordDigest(head, JSON.stringify(definitions)) !== digest)
    return refuse('digest does not match the record');
  const own = fields.scope;
  if (own.environment !== scope.environment || own.projects !== scope.projects)
    return refuse(
      `it holds the definitions of ${describeScope(own)}, not this backup's ${describeScope(scope)}`,
      true,
    );
  const { kept, ignored } = checkStoredTokens(tokens, scope.environment, now);
  return {
    record: {
      digest,
      fetchedAt,
      scope: own,
      tokens: kept,
      definitions: definitions as ClientFeaturesResponse,
    },
    ignoredTokens: ignored,
  };
}

/** The stored text of definitions accepted at `fetchedAt` in `scope`, and the record it stands for. */
export function encodeRecord(
  definitions: ClientFeaturesResponse,
  fetchedAt: number,
  scope: RecordScope,
  tokens: StoredToken[] = [],
): { value: string; record: BackupRecord } {
  const json = JSON.stringify(definitions);
  const head = headOf(scope, fetchedAt, tokens);
  const digest = recordDigest(head, json);
  const value = `{"format":${FORMAT},${head},"digest":"${digest}","definitions":${json}}`;
  return { value, record: { digest, fetchedAt, scope, tokens, definitions } };
}
