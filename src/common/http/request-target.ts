/** `http://` or `https://` at the start of a request target, any case. */
const ABSOLUTE = /^https?:\/\//i;

/**
 * A request target split into the authority an absolute form names (`host[:port]`, undefined for
 * the origin form) and its origin form (`/path?query`). HTTP/1.1 servers must accept the absolute
 * form (`GET http://host/path?query`, RFC 9112 section 3.2.2) and Node hands it over as sent, so
 * what matches paths reads the origin form. The path is kept byte for byte (no URL parser's
 * normalising), so both forms of one target meet the same route. Undefined for a target that has
 * no origin form (`*`, the authority form, anything else).
 */
export function splitTarget(target: string): { authority: string | undefined; origin: string } | undefined {
  if (target.startsWith('/')) return { authority: undefined, origin: target };
  if (!ABSOLUTE.test(target)) return undefined;
  const rest = target.slice(target.indexOf('//') + 2);
  const end = rest.search(/[/?#]/);
  const authority = end === -1 ? rest : rest.slice(0, end);
  const tail = end === -1 ? '' : rest.slice(end).replace(/#.*$/, '');
  const origin = tail.startsWith('/') ? tail : `/${tail}`;
  return { authority, origin };
}
