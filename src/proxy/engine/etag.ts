import { hash } from 'node:crypto';

/**
 * Where an answer's ETag comes from. Two kinds, both weak validators:
 * - derived: for an answer that is a pure function of the definitions and the context, a digest of
 *   (answer format, definitions digest, selection, canonical context). A matching `If-None-Match`
 *   is then answered 304 without evaluating and without remembering anything per user, and every
 *   process and replica with the same definitions gives the same ETag for the same context.
 * - of the body: for every other answer (chance, the clock, custom code decide), a digest of the
 *   bytes served.
 */

/** Changes whenever the serialisation of answers or of digests changes, so old validators stop matching. */
const ANSWER_FORMAT = 'flags-proxy/answer/2';

/**
 * Strings are digested as their UTF-16 code units: UTF-8 would turn every lone surrogate into
 * U+FFFD, so `"bob\uD83D"`, `"bob\uD83C"` and `"bob\uFFFD"` (which the SDK tells apart) would
 * share a validator. The length prefixes of `canonicalContext` count the same units.
 */
const digest = (input: string): string =>
  hash('sha256', Buffer.from(input, 'utf16le'), 'base64url').slice(0, 32);

/** The digest of one definitions revision: its canonical JSON (toggles sorted by name, their segments). */
export function definitionsDigest(definitions: unknown): string {
  return digest(`${ANSWER_FORMAT}\u0000${JSON.stringify(definitions)}`);
}

/**
 * The ETag of a pure answer: derived from its inputs, so it is known before evaluating. `scope`
 * (environment and projects of the key, see `scopes/scope.ts`) is part of it when given, so
 * the same context in two scopes never shares a validator; without it the digest is the one of a
 * single-environment proxy.
 */
export function derivedEtag(
  definitions: string,
  selection: string,
  canonicalContext: string,
  scope?: string,
): string {
  const inputs = `${definitions}\u0000${selection}\u0000${canonicalContext}`;
  return `W/"d-${digest(scope === undefined ? inputs : `${inputs}\u0000${scope}`)}"`;
}

/**
 * The derived ETag of the same pure inputs served in another answer format (`format`, e.g. OFREP's
 * bulk answer), from the derived ETag of the toggle list: equal inputs, equal validators, and no
 * validator of one format ever matches the other.
 */
export function derivedEtagOf(format: string, listEtag: string): string {
  return `W/"d-${digest(`${ANSWER_FORMAT}\u0000${format}\u0000${listEtag}`)}"`;
}

/** The ETag of an answer that only its body can validate. */
export function bodyEtag(body: string | Buffer): string {
  return `W/"b-${hash('sha256', body, 'base64url').slice(0, 32)}"`;
}
