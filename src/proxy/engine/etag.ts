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
const ANSWER_FORMAT = 'flags-proxy/answer/3';

/** `String.prototype.isWellFormed` (ES2024, in Node.js since 20): no lone surrogate in the string. */
const isWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;
const wellFormed = (text: string): boolean => isWellFormed !== undefined && isWellFormed.call(text);

/**
 * The digest of a string, exact on every string the SDK can tell apart. A well-formed string
 * (every one the bench and real clients send) is digested as UTF-8, which the hash encodes itself
 * without a copy; UTF-8 would turn a lone surrogate into U+FFFD, so that `"bob\uD83D"`,
 * `"bob\uD83C"` and `"bob\uFFFD"` would share a validator, hence a string with one is digested
 * as its UTF-16 code units instead. The two encodings start with different bytes (`u` and `x`),
 * so no string of one form ever shares its input with a string of the other. The length prefixes of
 * `canonicalContext` count UTF-16 code units in both.
 */
const digest = (input: string): string =>
  (wellFormed(input)
    ? hash('sha256', `u\u0000${input}`, 'base64url')
    : hash('sha256', Buffer.from(`x\u0000${input}`, 'utf16le'), 'base64url')
  ).slice(0, 32);

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
