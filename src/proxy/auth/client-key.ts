import { hash, timingSafeEqual } from 'node:crypto';
import { AuthenticationRequired } from '../../common/errors/http-errors';

// One-shot hashing: no Hash object per request on the hot path.
const digest = (value: string): Buffer => hash('sha256', value, 'buffer');

/** Constant-time membership test of a secret in a list of secrets. */
export function secretMatcher(secrets: readonly string[]): (candidate: string) => boolean {
  const digests = secrets.map(digest);
  return (candidate) => {
    const d = digest(candidate);
    let found = false;
    for (const known of digests) found = timingSafeEqual(known, d) || found;
    return found;
  };
}

/** Reads a key from a header value, accepting both `<key>` and `Bearer <key>`. */
export function keyFromHeader(value: string | string[] | undefined): string | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw === '') return undefined;
  const bearer = /^Bearer\s+(.+)$/i.exec(raw);
  return (bearer ? bearer[1] : raw).trim();
}

/** The client-key step: a refusal for a header value, undefined when it carries an accepted key. */
export type KeyCheck = (
  value: string | string[] | undefined,
  connection?: object,
) => AuthenticationRequired | undefined;

/** Longest header value remembered as accepted on a connection. */
const REMEMBERED_MAX_LENGTH = 512;

/**
 * The client-key step of every request that needs one. Refusals are built once, so refusing costs
 * no more than checking. With `connection` (the request's socket), the header value last accepted
 * on that connection is remembered, so a keep-alive client repeating its key is not hashed again;
 * the comparison with the remembered value is constant-time too, and an unequal value goes through
 * the full check. Keys are fixed for the life of the process, so an accepted value stays accepted.
 */
export function keyCheck(headerName: string, keys: readonly string[], what: string): KeyCheck {
  const matches = secretMatcher(keys);
  const missing = new AuthenticationRequired(`Missing ${what}: send it in the "${headerName}" header`);
  const invalid = new AuthenticationRequired(`Invalid ${what} in the "${headerName}" header`);
  const accepted = new WeakMap<object, Buffer>();
  return (value, connection) => {
    if (connection !== undefined && typeof value === 'string') {
      const last = accepted.get(connection);
      if (last !== undefined && last.length === Buffer.byteLength(value)) {
        if (timingSafeEqual(last, Buffer.from(value))) return undefined;
      }
    }
    const key = keyFromHeader(value);
    if (key === undefined) return missing;
    if (!matches(key)) return invalid;
    if (connection !== undefined && typeof value === 'string' && value.length <= REMEMBERED_MAX_LENGTH)
      accepted.set(connection, Buffer.from(value));
    return undefined;
  };
}
