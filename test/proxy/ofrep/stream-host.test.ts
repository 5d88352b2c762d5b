/**
 * The change stream of a bulk answer names the request's host only when `Host` is a valid
 * `host[:port]`: a junk or injected `Host` (a path, userinfo, a bad port, markup, spaces) never
 * reaches the answer. The stream is then given as ADR-0008's `endpoint.requestUri`, which
 * `@openfeature/ofrep-web-provider` puts on the origin of its own base URL — tested with the real
 * provider below.
 */
import http from 'node:http';
import net from 'node:net';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
import { ClientProviderEvents, OpenFeature } from '@openfeature/web-sdk';
import { EventSource } from 'eventsource';
import type { ProxyApp } from '../../../src/proxy/app';
import { LoopbackServers } from '../../support/listen';
import { CLIENT_KEY, expressRouted, readyProxyFor, waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';
import { ofrepFeatures, withToggle } from './fixtures';

/** Node 20 has no EventSource; browsers do. The web provider looks for the global one. */
(globalThis as { EventSource?: unknown }).EventSource = EventSource;

const BULK = '/ofrep/v1/evaluate/flags';
const STREAM_URI = /^\/ofrep\/v1\/flag-changes\?token=[A-Za-z0-9_-]+&since=[^&]+$/;

interface StreamEntry {
  type: string;
  url?: string;
  endpoint?: { origin?: string; requestUri: string };
  inactivityDelaySec: number;
}

const upstream = new TestUpstream(ofrepFeatures());
const servers = new LoopbackServers();
let app: ProxyApp;
let base: string;
/** The port of `app.listener` (the front first, as `start()` serves) and of the Express app given as is. */
const ports = { listener: 0, express: 0 };
/** Requests that reached Express's router. */
let routed: string[] = [];

beforeAll(async () => {
  await upstream.start();
  app = await readyProxyFor(upstream, {});
  routed = expressRouted(app);
  base = await servers.listen(app.listener);
  ports.listener = Number(new URL(base).port);
  ports.express = Number(new URL(await servers.listen(app)).port);
});

afterAll(async () => {
  await OpenFeature.close();
  await servers.closeAll();
  await app.close();
  await upstream.stop();
});

/** A bulk request written byte for byte (any `Host` line, or none with HTTP/1.0); status and body text. */
function rawBulk(
  host: string | undefined,
  keyHeader: string,
  port: number,
): Promise<{ status: number; body: string }> {
  const body = JSON.stringify({ context: { targetingKey: 'alice' } });
  const lines = [
    `POST ${BULK} HTTP/${host === undefined ? '1.0' : '1.1'}`,
    ...(host === undefined ? [] : [`Host: ${host}`]),
    `${keyHeader}: ${CLIENT_KEY}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
  ];
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      resolve({ status: Number(text.slice(9, 12)), body: text.slice(split + 4) });
    });
    socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
  });
}

const JUNK_HOSTS = [
  'evil.example/phish?x=',
  'user:secret@evil.example',
  'evil.example:99999',
  'evil.example:80:80',
  'evil.example#frag',
  'evil.example other',
  '"><script>evil()</script>',
  '[::1',
  '[evil.example]:80',
  'evil..example',
  '',
];

describe('the change stream of a bulk answer', () => {
  // The same endpoint reads the request as the listener hands it (the connection and `Host`) and as
  // Express does (`req.protocol`, `req.host`); the key in the configured header or another one.
  describe.each([
    { via: 'listener' as const, keyHeader: 'Authorization' },
    { via: 'listener' as const, keyHeader: 'X-API-Key' },
    { via: 'express' as const, keyHeader: 'Authorization' },
    { via: 'express' as const, keyHeader: 'X-API-Key' },
  ])('through the $via, key in $keyHeader', ({ via, keyHeader }) => {
    const port = () => ports[via];
    test.each(JUNK_HOSTS.map((host) => ({ host })))(
      'Host "$host": a path-only endpoint, nothing of the Host in the answer',
      async ({ host }) => {
        const routedBefore = routed.length;
        const answer = await rawBulk(host, keyHeader, port());
        expect(answer.status).toBe(200);
        // the front answers through the listener without Express; an app given as is routes first
        expect(routed.length - routedBefore).toBe(via === 'listener' ? 0 : 1);
        const [stream] = (JSON.parse(answer.body) as { eventStreams: StreamEntry[] }).eventStreams;
        expect(stream.url).toBeUndefined();
        expect(stream).toEqual({
          type: 'sse',
          endpoint: { requestUri: expect.stringMatching(STREAM_URI) as string },
          inactivityDelaySec: 120,
        });
        expect(answer.body).not.toContain('evil');
        expect(answer.body).not.toContain('secret');
      },
    );

    test('no Host at all (HTTP/1.0): a path-only endpoint', async () => {
      const answer = await rawBulk(undefined, keyHeader, port());
      expect(answer.status).toBe(200);
      const [stream] = (JSON.parse(answer.body) as { eventStreams: StreamEntry[] }).eventStreams;
      expect(stream.url).toBeUndefined();
      expect(stream.endpoint?.requestUri).toMatch(STREAM_URI);
    });

    test.each(['flags.example.com:8443', '[::1]:3063', '127.0.0.1:9', 'localhost', 'flags_1.internal.'])(
      'a valid Host %s is kept: an absolute url on it',
      async (host) => {
        const answer = await rawBulk(host, keyHeader, port());
        expect(answer.status).toBe(200);
        const [stream] = (JSON.parse(answer.body) as { eventStreams: StreamEntry[] }).eventStreams;
        expect(stream.endpoint).toBeUndefined();
        expect(stream.url?.startsWith(`http://${host}/ofrep/v1/flag-changes?`)).toBe(true);
        expect(stream.url?.slice(`http://${host}`.length)).toMatch(STREAM_URI);
      },
    );
  });
});

/**
 * A fetch for the provider that sends its requests with a junk `Host` (Node's fetch always sends the
 * URL's own host), as a client behind a misbehaving front would arrive.
 */
function fetchWithHost(host: string, onRequest: (url: string) => void): typeof fetch {
  return async (input, init) => {
    // the provider hands over a Request (URL, method, headers and body), `init` carries its signal
    const request = new Request(input, init);
    onRequest(request.url);
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => (headers[name] = value));
    headers.host = host;
    const body = request.body === null ? undefined : Buffer.from(await request.arrayBuffer());
    return new Promise((resolve, reject) => {
      const req = http.request(request.url, { method: request.method, headers, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const responseHeaders = new Headers();
          for (const [name, value] of Object.entries(res.headers))
            if (typeof value === 'string') responseHeaders.set(name, value);
          const answer = status === 304 || status === 204 ? null : Buffer.concat(chunks);
          resolve(new Response(answer, { status, headers: responseHeaders }));
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  };
}

describe('@openfeature/ofrep-web-provider with a path-only stream endpoint', () => {
  test('opens the stream on its base URL and receives changes', async () => {
    const bulks: string[] = [];
    const provider = new OFREPWebProvider({
      baseUrl: base,
      headers: [['Authorization', `Bearer ${CLIENT_KEY}`]],
      pollInterval: 0,
      changeDetection: 'sse',
      cacheMode: 'disabled',
      fetchImplementation: fetchWithHost('evil.example/phish?', (url) => bulks.push(url)),
    });
    await OpenFeature.setProviderAndWait('junk-host', provider, { targetingKey: 'alice' });
    const client = OpenFeature.getClient('junk-host');
    expect(bulks.length).toBeGreaterThan(0);
    expect(client.getBooleanValue('switched-off', false)).toBe(false);
    // the provider's EventSource reached the proxy's stream (on the base URL's origin, not the junk host)
    await waitFor(() => app.changeStreams.size >= 1, 10_000);
    let changed = false;
    client.addHandler(ClientProviderEvents.ConfigurationChanged, () => (changed = true));
    upstream.setFeatures(withToggle(ofrepFeatures(), 'switched-off', true));
    await waitFor(() => changed && client.getBooleanValue('switched-off', false), 10_000);
    upstream.setFeatures(ofrepFeatures());
  });
});
