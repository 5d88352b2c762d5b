import type { HeaderObject } from 'openapi3-ts/oas31';

/**
 * The documented `Vary` of an answer that depends on the caller's key (`KeyVary`): one value,
 * written out for this proxy's configuration.
 */
export function varyHeader(vary: string): HeaderObject {
  return {
    description:
      `\`${vary}\`: the answer depends on the key, so a shared cache (a CDN, a reverse proxy) keeps one ` +
      'entry per key and never serves it to another key or to a request without one',
    schema: { type: 'string', const: vary },
  };
}
