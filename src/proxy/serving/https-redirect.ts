import type { RequestListener } from 'node:http';
import { ValidationError } from '../../common/errors/http-errors';
import { sendError } from '../../common/http/error-middleware';
import { validHost } from '../../common/http/host';
import { splitTarget } from '../../common/http/request-target';

/** The request's host with its port replaced by `port` (an IPv6 literal keeps its brackets). */
function authorityOn(host: string, port: number): string {
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d*$/, '');
  return `${name}:${port}`;
}

/**
 * REDIRECT_HTTP_TO_HTTPS: the plain-HTTP port answers every request with a permanent redirect
 * (308, so a POST stays a POST) to the same path and query on the HTTPS port, as Unleash Edge does
 * (of an absolute-form target too: its origin form).
 * A missing or malformed `Host` is a 400: it is never written into a `Location` unchecked.
 */
export function httpsRedirect(httpsPort: number): RequestListener {
  const badHost = new ValidationError(
    'The Host header is missing or not a host[:port]; cannot redirect to HTTPS',
  );
  return (req, res) => {
    // An absolute-form target names the host itself and wins over `Host` (RFC 9112 section 3.2.2).
    const target = splitTarget(req.url ?? '/');
    const host = validHost(target?.authority ?? req.headers.host);
    if (host === undefined) {
      sendError(res, badHost);
      return;
    }
    const path = target?.origin ?? '/';
    res.writeHead(308, { Location: `https://${authorityOn(host, httpsPort)}${path}`, 'Content-Length': '0' });
    res.end();
    req.resume();
  };
}
