import { createHash } from 'node:crypto';

/**
 * A token the upstream confirmed, as a backup keeps it: its digest, never the secret, with the
 * scope the upstream gave it and when it last did.
 */
export interface StoredToken {
  /** `tokenDigest` of the token as clients send it. */
  readonly digest: string;
  /** `frontend`, `client`, `backend`…, as the upstream named it. */
  readonly type: string;
  readonly environment: string;
  readonly projects: readonly string[];
  /** Epoch ms when the upstream last confirmed it. */
  readonly validatedAt: number;
}

/** Most tokens one record keeps (the validator remembers as many accepted tokens). */
export const MAX_STORED_TOKENS = 10_000;

/** SHA-256 (hex) of a token, under a label of its own: what a backup stores instead of the token. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update('flags-proxy validated token\n').update(token).digest('hex');
}

const DIGEST = /^[0-9a-f]{64}$/;
const TYPE = /^[a-z]{1,32}$/;
const FUTURE_TOLERANCE_MS = 60_000;

function isStoredToken(value: unknown, now: number): value is StoredToken {
  if (typeof value !== 'object' || value === null) return false;
  const { digest, type, environment, projects, validatedAt } = value as Record<string, unknown>;
  return (
    typeof digest === 'string' &&
    DIGEST.test(digest) &&
    typeof type === 'string' &&
    TYPE.test(type) &&
    typeof environment === 'string' &&
    environment.length > 0 &&
    Array.isArray(projects) &&
    projects.length > 0 &&
    projects.every((p) => typeof p === 'string' && p.length > 0 && p.length <= 256) &&
    typeof validatedAt === 'number' &&
    Number.isFinite(validatedAt) &&
    validatedAt <= now + FUTURE_TOLERANCE_MS
  );
}

/**
 * The tokens of a record that may be served by a backup of `environment`; what is left out
 * (malformed entries, tokens of another environment, entries past the bound) is named in one line.
 */
export function checkStoredTokens(
  tokens: readonly unknown[],
  environment: string,
  now: number,
): { kept: StoredToken[]; ignored: string | undefined } {
  const kept: StoredToken[] = [];
  let malformed = 0;
  const foreign = new Set<string>();
  let beyond = 0;
  for (const token of tokens) {
    if (!isStoredToken(token, now)) malformed += 1;
    else if (token.environment !== environment) foreign.add(token.environment);
    else if (kept.length >= MAX_STORED_TOKENS) beyond += 1;
    else
      kept.push({
        digest: token.digest,
        type: token.type,
        environment: token.environment,
        projects: [...token.projects],
        validatedAt: token.validatedAt,
      });
  }
  const parts: string[] = [];
  if (malformed > 0) parts.push(`${malformed} malformed`);
  if (foreign.size > 0)
    parts.push(
      `those of another environment (${[...foreign]
        .slice(0, 5)
        .map((e) => JSON.stringify(e.slice(0, 64)))
        .join(', ')}), not ${JSON.stringify(environment)}`,
    );
  if (beyond > 0) parts.push(`${beyond} beyond ${MAX_STORED_TOKENS}`);
  return { kept, ignored: parts.length > 0 ? `ignoring validated tokens: ${parts.join('; ')}` : undefined };
}
