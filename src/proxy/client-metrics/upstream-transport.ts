import { post } from '../upstream/sdk/modules';
import type { HttpOptions } from '../upstream/sdk/types';
import { upstreamHeaders } from '../transport/upstream-headers';
import { CHAIN_HEADER } from './usage-chain';

export type UpstreamPath = 'client/metrics' | 'client/register';

/**
 * Posts one JSON body to the upstream's client API; resolves with the HTTP status, rejects on
 * network errors. `chain`: the markers of the instances the body passed through, this one's last
 * (see `usage-chain.ts`).
 */
export type UpstreamPost = (
  path: UpstreamPath,
  appName: string,
  body: Record<string, unknown>,
  chain: readonly string[],
) => Promise<number>;

export interface SdkTransportOptions {
  flagsUrl: string;
  flagsApiToken: string;
  instanceId: string;
  metricsInterval: number;
  /** The same agent and TLS options as the SDK's own requests (proxy servers, rejectUnauthorized). */
  httpOptions: HttpOptions;
  timeoutMs?: number;
  /** CUSTOM_CLIENT_HEADERS: sent beside the token, which wins over a custom `Authorization`. */
  customHeaders?: Readonly<Record<string, string>>;
}

/** Printable ASCII: what travels in an HTTP header value unchanged on every server and proxy. */
const HEADER_SAFE = /^[\x20-\x7e]*$/;

/**
 * The app name as the `unleash-appname` and `User-Agent` headers carry it: unchanged when it is
 * printable ASCII, percent-encoded otherwise (a CJK name, a control character), because Node refuses
 * to send a header value outside Latin-1 and a server may mangle one outside ASCII. The body always
 * carries the name exactly as the client sent it: that is what the upstream records.
 */
export function headerAppName(appName: string): string {
  return HEADER_SAFE.test(appName) ? appName : encodeURIComponent(appName);
}

/**
 * Forwards through the SDK's own HTTP transport, so forwarded usage metrics travel exactly like the
 * SDK's requests: same agent (HTTP(S)_PROXY, NO_PROXY), TLS options and SDK headers. The
 * `unleash-appname` header carries the client's app name (see `headerAppName`).
 */
export function sdkTransport(opts: SdkTransportOptions): UpstreamPost {
  const base = `${opts.flagsUrl.replace(/\/+$/, '')}/`;
  return async (path, appName, body, chain) => {
    const res: { status: number; text(): Promise<string> } = await post({
      url: `${base}${path}`,
      json: body,
      appName: headerAppName(appName),
      instanceId: opts.instanceId,
      interval: opts.metricsInterval,
      headers: {
        ...upstreamHeaders(opts.customHeaders, opts.flagsApiToken),
        [CHAIN_HEADER]: chain.join(','),
      },
      timeout: opts.timeoutMs ?? 10_000,
      httpOptions: opts.httpOptions,
    });
    await res.text().catch(() => ''); // drain, so the keep-alive socket is reused
    return res.status;
  };
}
