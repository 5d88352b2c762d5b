import type { HttpOptions } from 'unleash-client/lib/http-options';
import { post } from 'unleash-client/lib/request';

export type UpstreamPath = 'client/metrics' | 'client/register';

/** Posts one JSON body to the upstream's client API; resolves with the HTTP status, rejects on network errors. */
export type UpstreamPost = (
  path: UpstreamPath,
  appName: string,
  body: Record<string, unknown>,
) => Promise<number>;

export interface SdkTransportOptions {
  flagsUrl: string;
  flagsApiToken: string;
  instanceId: string;
  metricsInterval: number;
  /** The same agent and TLS options as the SDK's own requests (proxy servers, rejectUnauthorized). */
  httpOptions: HttpOptions;
  timeoutMs?: number;
}

/**
 * Forwards through the SDK's own HTTP transport, so forwarded usage metrics travel exactly like the
 * SDK's requests: same agent (HTTP(S)_PROXY, NO_PROXY), TLS options and SDK headers. The
 * `unleash-appname` header carries the client's app name.
 */
export function sdkTransport(opts: SdkTransportOptions): UpstreamPost {
  const base = `${opts.flagsUrl.replace(/\/+$/, '')}/`;
  return async (path, appName, body) => {
    const res: { status: number; text(): Promise<string> } = await post({
      url: `${base}${path}`,
      json: body,
      appName,
      instanceId: opts.instanceId,
      interval: opts.metricsInterval,
      headers: { Authorization: opts.flagsApiToken },
      timeout: opts.timeoutMs ?? 10_000,
      httpOptions: opts.httpOptions,
    });
    await res.text().catch(() => ''); // drain, so the keep-alive socket is reused
    return res.status;
  };
}
