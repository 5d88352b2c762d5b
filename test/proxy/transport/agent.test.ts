import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http, { type Server } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { createApp, type ProxyApp } from '../../../src/proxy/app';
import { silentLogger } from '../../../src/common/logging/logger';
import { bypassesProxy, upstreamAgent } from '../../../src/proxy/transport/agent';
import { sampleFeatures } from '../../support/fixtures';
import { CLIENT_KEY, proxyFor, waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

const TOKEN = 'tls-upstream-token';

/** A self-signed certificate for 127.0.0.1/localhost, made by openssl for this test run. */
function selfSignedCertificate(dir: string): { key: Buffer; cert: Buffer } {
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-sha256',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(key), cert: readFileSync(cert) };
}

/** An HTTPS client-API upstream with the sample features. */
class TlsUpstream {
  server: https.Server;
  paths: string[] = [];
  tlsErrors = 0;
  constructor(credentials: { key: Buffer; cert: Buffer }) {
    const body = JSON.stringify(sampleFeatures());
    this.server = https.createServer(credentials, (req, res) => {
      this.paths.push(req.url ?? '');
      req.resume();
      if (req.headers.authorization !== TOKEN) return void res.writeHead(401).end();
      if (req.url?.startsWith('/api/client/features')) {
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      }
      res.writeHead(202).end();
    });
    this.server.on('tlsClientError', () => {
      this.tlsErrors += 1;
    });
  }
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }
  get url(): string {
    return `https://127.0.0.1:${(this.server.address() as AddressInfo).port}/api`;
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** A tiny HTTP forward proxy: absolute-URI requests for http:// and CONNECT tunnels for https://. */
class ForwardProxy {
  readonly seen: string[] = [];
  private readonly sockets = new Set<Socket>();
  readonly server: Server = http.createServer((req, res) => {
    this.seen.push(`${req.method} ${req.url}`);
    const target = new URL(req.url ?? '');
    const out = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname + target.search,
        method: req.method,
        headers: req.headers,
      },
      (upstreamRes) => {
        res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
        upstreamRes.pipe(res);
      },
    );
    out.on('error', () => res.writeHead(502).end());
    req.pipe(out);
  });
  constructor() {
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    this.server.on('connect', (req, client: Socket, head: Buffer) => {
      this.seen.push(`CONNECT ${req.url}`);
      const [host, port] = (req.url ?? '').split(':');
      const tunnel = net.connect(Number(port), host, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        tunnel.write(head);
        tunnel.pipe(client);
        client.pipe(tunnel);
      });
      this.sockets.add(tunnel);
      tunnel.on('close', () => this.sockets.delete(tunnel));
      tunnel.on('error', () => client.destroy());
      client.on('error', () => tunnel.destroy());
    });
  }
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * Waits until the SDK gave up its first fetch (it retries a failed GET twice, on timers nobody can
 * cancel), so that closing the app leaves no timer behind.
 */
const settled = (app: ProxyApp) => waitFor(() => app.features.stats.fetchErrors > 0, 15_000);

describe('upstream transport', () => {
  let dir: string;
  let tls: TlsUpstream;
  let plain: TestUpstream;
  let forward: ForwardProxy;
  const apps: ProxyApp[] = [];
  const track = (app: ProxyApp) => (apps.push(app), app);
  const tlsProxy = (options: Parameters<typeof createApp>[0], env: NodeJS.ProcessEnv = {}) =>
    track(
      createApp(
        {
          flagsUrl: tls.url,
          flagsApiToken: TOKEN,
          clientKeys: [CLIENT_KEY],
          refreshInterval: 200,
          metricsInterval: 60_000,
          logger: silentLogger,
          ...options,
        },
        env,
      ),
    );

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'flags-proxy-tls-'));
    tls = await new TlsUpstream(selfSignedCertificate(dir)).start();
    plain = await new TestUpstream(sampleFeatures()).start();
    forward = await new ForwardProxy().start();
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });
  afterAll(async () => {
    await Promise.all([tls.stop(), plain.stop(), forward.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  describe('TLS certificate checks (httpOptions.rejectUnauthorized)', () => {
    it('never becomes ready against a self-signed upstream certificate by default', async () => {
      const before = tls.tlsErrors;
      const app = tlsProxy({ refreshInterval: 60_000 });
      await waitFor(() => tls.tlsErrors > before);
      await settled(app);
      expect(app.features.isReady()).toBe(false);
      await request(app).get('/proxy/health').expect(503);
      expect(tls.paths).not.toContain('/api/client/features');
    });

    it('becomes ready and serves flags with rejectUnauthorized false', async () => {
      const app = tlsProxy({ httpOptions: { rejectUnauthorized: false } });
      await app.whenReady();
      const res = await request(app).get('/proxy').set('authorization', CLIENT_KEY).expect(200);
      expect(res.body.toggles.map((t: { name: string }) => t.name)).toContain('always-on');
    });

    it('takes rejectUnauthorized from HTTP_OPTIONS_REJECT_UNAUTHORIZED', async () => {
      const app = tlsProxy({}, { HTTP_OPTIONS_REJECT_UNAUTHORIZED: 'false' });
      await app.whenReady();
      expect(app.features.isReady()).toBe(true);
    });
  });

  describe('HTTP forward proxies', () => {
    it('reaches an http upstream through httpProxy, and the proxy server sees the request', async () => {
      forward.seen.length = 0;
      const app = track(proxyFor(plain, { httpProxy: forward.url }));
      await app.whenReady();
      expect(forward.seen).toContain(`GET ${plain.url}/client/features`);
      await request(app).get('/proxy').set('authorization', CLIENT_KEY).expect(200);
    });

    it('takes the proxy server from HTTP_PROXY in the environment', async () => {
      forward.seen.length = 0;
      const app = track(
        createApp(
          { flagsUrl: plain.url, flagsApiToken: plain.token, clientKeys: [CLIENT_KEY], logger: silentLogger },
          { HTTP_PROXY: forward.url },
        ),
      );
      await app.whenReady();
      expect(forward.seen).toContain(`GET ${plain.url}/client/features`);
    });

    it('tunnels an https upstream through httpsProxy with CONNECT', async () => {
      forward.seen.length = 0;
      const app = tlsProxy({ httpsProxy: forward.url, httpOptions: { rejectUnauthorized: false } });
      await app.whenReady();
      expect(forward.seen).toContain(`CONNECT ${new URL(tls.url).host}`);
    });

    it('still checks the upstream certificate through a tunnel', async () => {
      forward.seen.length = 0;
      const before = tls.tlsErrors;
      const app = tlsProxy({ httpsProxy: forward.url, refreshInterval: 60_000 });
      await waitFor(() => tls.tlsErrors > before);
      await settled(app);
      expect(forward.seen.some((s) => s.startsWith('CONNECT'))).toBe(true);
      expect(app.features.isReady()).toBe(false);
    });

    it('goes direct for hosts listed in NO_PROXY', async () => {
      forward.seen.length = 0;
      const app = track(
        createApp(
          { flagsUrl: plain.url, flagsApiToken: plain.token, clientKeys: [CLIENT_KEY], logger: silentLogger },
          { HTTP_PROXY: forward.url, NO_PROXY: 'example.com, 127.0.0.1' },
        ),
      );
      await app.whenReady();
      expect(forward.seen).toEqual([]);
    });
  });

  describe('the agent factory other parts reuse', () => {
    const config = (over: Partial<Parameters<typeof upstreamAgent>[0]> = {}) => ({
      httpProxy: undefined,
      httpsProxy: undefined,
      noProxy: undefined,
      httpOptions: { rejectUnauthorized: true },
      ...over,
    });

    it('returns one agent per scheme, proxied only where a proxy is configured', () => {
      const agentFor = upstreamAgent(config({ httpsProxy: 'http://proxy.local:3128' }));
      const direct = agentFor(new URL('http://upstream.local/api'));
      expect(direct).toBeInstanceOf(http.Agent);
      expect(agentFor(new URL('http://other.local/'))).toBe(direct);
      const tunnelled = agentFor(new URL('https://upstream.local/api'));
      expect(tunnelled).not.toBeInstanceOf(https.Agent);
      expect(tunnelled.constructor.name).toBe('HttpsProxyAgent');
    });

    it.each([
      ['api.example.com', 'example.com', true],
      ['example.com', '.example.com', true],
      ['api.example.com', '*.example.com', true],
      ['notexample.com', 'example.com', false],
      ['127.0.0.1', '127.0.0.1:4242', true],
      ['127.0.0.1', '127.0.0.1:9999', false],
      ['anything.local', '*', true],
      ['upstream.local', 'a.local other.local', false],
    ])('NO_PROXY matching: %s against "%s" is %s', (host, noProxy, expected) => {
      expect(bypassesProxy(new URL(`http://${host}:4242/api`), noProxy)).toBe(expected);
    });
  });
});
