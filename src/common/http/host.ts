import { isIPv4, isIPv6 } from 'node:net';

/** A DNS name or IPv4 address: dot-separated labels of letters, digits, `-` and `_`, a final dot allowed. */
const NAME =
  /^(?=.{1,253}\.?$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/;
const PORT = /^[0-9]{1,5}$/;
/** A label a URL parser reads as a number (WHATWG's "ends in a number"): the host is then an IPv4 address to it. */
const NUMERIC_LABEL = /^(?:[0-9]+|0x[0-9a-f]*)$/i;

/**
 * `value` when it is a syntactically valid `host[:port]` (a name, an IPv4 address or a bracketed
 * IPv6 literal, a port up to 65535), else undefined: no userinfo, path, query, spaces or control
 * characters, and no name ending in a number unless it is a dotted-quad IPv4 address (a URL parser
 * reads such a name as an address, and refuses `08` or `1.2.3.09`), so a `Host` header can be
 * written into a URL without changing what the URL points to.
 */
export function validHost(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  let host = value;
  let port: string | undefined;
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    if (end === -1) return undefined;
    host = value.slice(0, end + 1);
    const rest = value.slice(end + 1);
    if (rest !== '') {
      if (!rest.startsWith(':')) return undefined;
      port = rest.slice(1);
    }
    if (!isIPv6(host.slice(1, -1))) return undefined;
  } else {
    const colon = value.indexOf(':');
    if (colon !== -1) {
      host = value.slice(0, colon);
      port = value.slice(colon + 1);
    }
    if (!NAME.test(host)) return undefined;
    // ends in a number: only a plain dotted quad is an address every URL parser accepts ("08" is not)
    const name = host.endsWith('.') ? host.slice(0, -1) : host;
    const labels = name.split('.');
    if (NUMERIC_LABEL.test(labels[labels.length - 1]) && !isIPv4(name)) return undefined;
  }
  if (port !== undefined && !(PORT.test(port) && Number(port) <= 65535)) return undefined;
  return value;
}
