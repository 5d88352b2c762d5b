import { canonicalHeaderName, mergeVary } from '../../common/http/vary';

/**
 * The `Vary` values of answers that depend on the caller's key (its environment and projects), one
 * per kind of endpoint, computed once from the configuration. Naming the key's header makes a
 * shared cache (nginx's `proxy_cache`, a CDN) keep one entry per key and never hand one key's
 * answer to another key or to a request without one, while `Cache-Control` stays the
 * specification's `public, max-age=2`. `Accept-Encoding` comes first, as the compression
 * middleware names it.
 */
export interface KeyVary {
  /** `/proxy`, `/api/frontend`, `/api/proxy` (and `/all`), `/api/frontend/features/{name}`: the client-key header. */
  readonly evaluation: string;
  /** OFREP: every header that can carry the key (the client-key header, `Authorization`, `X-API-Key`). */
  readonly ofrep: string;
  /** `/proxy/client/features`, `/api/client/features`: server-side tokens travel in `Authorization`. */
  readonly clientApi: string;
}

const ACCEPT_ENCODING = 'Accept-Encoding';

/** The `Vary` values for a proxy whose client keys travel in `clientKeysHeaderName`. */
export function keyVaryOf(clientKeysHeaderName: string): KeyVary {
  const keyHeader = canonicalHeaderName(clientKeysHeaderName);
  return {
    evaluation: mergeVary(ACCEPT_ENCODING, keyHeader),
    ofrep: mergeVary(ACCEPT_ENCODING, `${keyHeader}, Authorization, X-API-Key`),
    clientApi: mergeVary(ACCEPT_ENCODING, 'Authorization'),
  };
}
