import { createHash } from 'node:crypto';

/** A weak validator for a response body. */
export function weakEtag(body: string | Buffer): string {
  const hash = createHash('sha1').update(body).digest('base64url').slice(0, 27);
  return `W/"${Buffer.byteLength(body).toString(16)}-${hash}"`;
}

/**
 * True when an `If-None-Match` header names this ETag (weak comparison, `*` matches). Unlike
 * Express's freshness check it ignores `Cache-Control: no-cache`, which browsers and Node's fetch
 * send with every revalidation: the ETag is our own validator, so a match means "not modified".
 */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch === etag) return true; // what clients send back almost always
  const strip = (tag: string) => tag.trim().replace(/^W\//, '');
  const wanted = strip(etag);
  return ifNoneMatch.split(',').some((tag) => tag.trim() === '*' || strip(tag) === wanted);
}
