import http from 'node:http';
import https from 'node:https';
import { HttpProxyAgent } from 'http-proxy-agent';
import { HttpsProxyAgent } from 'https-proxy-agent';
import type { ProxyConfig } from '../config/types';
import { upstreamTlsOptions } from './upstream-tls';

export type TransportConfig = Pick<ProxyConfig, 'httpProxy' | 'httpsProxy' | 'noProxy' | 'httpOptions'> &
  Partial<Pick<ProxyConfig, 'upstreamTls'>>;

/** Same keep-alive settings as the SDK's own default agents. */
const AGENT_OPTIONS = { keepAlive: true, keepAliveMsecs: 30_000, timeout: 10_000 } as const;

const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' };

/**
 * Whether `url` is reached directly according to a NO_PROXY value: comma- or space-separated
 * entries, each `*`, a host name (`example.com` also matches `api.example.com`; a leading `.` or
 * `*.` is allowed), or an IP address, optionally with `:port`.
 */
export function bypassesProxy(url: URL, noProxy: string | undefined): boolean {
  if (noProxy === undefined) return false;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = url.port || DEFAULT_PORTS[url.protocol] || '';
  return noProxy
    .split(/[\s,]+/)
    .filter((entry) => entry !== '')
    .some((raw) => {
      if (raw === '*') return true;
      const match = /^(.+?)(?::(\d+))?$/.exec(raw.replace(/^\[(.*)\](:\d+)?$/, '$1$2'));
      if (!match) return false;
      const [, entryHost, entryPort] = match;
      if (entryPort !== undefined && entryPort !== port) return false;
      const name = entryHost.toLowerCase().replace(/^\*?\./, '');
      return host === name || host.endsWith(`.${name}`);
    });
}

/**
 * The agent factory for every request the proxy makes to its upstream (the SDK's fetches and
 * metrics, and usage metrics forwarded for client SDKs). It applies `httpProxy` / `httpsProxy`
 * (HTTP_PROXY / HTTPS_PROXY), `noProxy` (NO_PROXY), `httpOptions.rejectUnauthorized` and the
 * upstream TLS files (an extra CA, a client identity: `upstream-tls.ts`) from the resolved
 * configuration.
 *
 * It always returns a factory, also without any proxy configured (direct keep-alive agents then), so
 * the `env` given to `createApp` wins over `process.env`, which the SDK's default agent would read.
 * Build it once per app: the agents keep connections alive between requests.
 */
export function upstreamAgent(config: TransportConfig): (url: URL) => http.Agent {
  const rejectUnauthorized = config.httpOptions.rejectUnauthorized;
  const tls = config.upstreamTls ? upstreamTlsOptions(config.upstreamTls) : {};
  const direct = {
    http: new http.Agent(AGENT_OPTIONS),
    https: new https.Agent({ ...AGENT_OPTIONS, ...tls, rejectUnauthorized }),
  };
  const viaProxy = {
    http: config.httpProxy ? new HttpProxyAgent(config.httpProxy, AGENT_OPTIONS) : undefined,
    https: config.httpsProxy
      ? new HttpsProxyAgent(config.httpsProxy, { ...AGENT_OPTIONS, ...tls, rejectUnauthorized })
      : undefined,
  };
  return (url: URL) => {
    const secure = url.protocol === 'https:';
    const proxied = secure ? viaProxy.https : viaProxy.http;
    if (proxied && !bypassesProxy(url, config.noProxy)) return proxied;
    return secure ? direct.https : direct.http;
  };
}
