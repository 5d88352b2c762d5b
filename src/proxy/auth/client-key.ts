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

/**
 * The client-key step of every request that needs one: the refusal to answer for a header value,
 * or undefined when it carries one of the accepted keys. Refusals are built once, so refusing costs
 * no more than checking.
 */
export function keyCheck(
  headerName: string,
  keys: readonly string[],
  what: string,
): (value: string | string[] | undefined) => AuthenticationRequired | undefined {
  const matches = secretMatcher(keys);
  const missing = new AuthenticationRequired(`Missing ${what}: send it in the "${headerName}" header`);
  const invalid = new AuthenticationRequired(`Invalid ${what} in the "${headerName}" header`);
  return (value) => {
    const key = keyFromHeader(value);
    if (key === undefined) return missing;
    return matches(key) ? undefined : invalid;
  };
}
