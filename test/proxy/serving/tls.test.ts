import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { connect as connectTcp } from 'node:net';
import path from 'node:path';
import { connect as connectTls, type ConnectionOptions } from 'node:tls';
import { sampleFeatures } from '../../support/fixtures';
import { freePort } from '../../support/listen';
import {
  assertBuilt,
  makeCertificates,
  request,
  startProgram,
  waitForStatus,
  type Program,
  type TestCertificates,
} from '../../support/program';
import { waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

jest.setTimeout(90_000);

const KEY = 'tls-key';
const asKey = { authorization: KEY };

let certs: TestCertificates;
let upstream: TestUpstream | undefined;
let program: Program | undefined;

beforeAll(() => {
  assertBuilt();
  certs = makeCertificates();
});
afterAll(() => certs.remove());
afterEach(async () => {
  await program?.kill();
  program = undefined;
  await upstream?.stop();
  upstream = undefined;
});

/** Writes `head` as is on a new connection and answers the status line and headers read back. */
function rawRequest(port: number, head: string): Promise<{ status: number; headers: Map<string, string> }> {
  return new Promise((resolve, reject) => {
    const socket = connectTcp(port, '127.0.0.1', () => socket.write(head));
    let text = '';
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      socket.destroy();
      const headers = new Map(
        text
          .slice(0, end)
          .split('\r\n')
          .slice(1)
          .map((line): [string, string] => {
            const colon = line.indexOf(':');
            return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
          }),
      );
      resolve({ status: Number(text.slice(9, 12)), headers });
    });
    socket.on('error', reject);
  });
}

/** The TLS handshake with `options`: the negotiated cipher and version, or the error that ended it. */
function handshake(
  port: number,
  options: ConnectionOptions,
): Promise<{ cipher: string; version: string } | { error: string }> {
  return new Promise((resolve) => {
    const socket = connectTls(
      { host: '127.0.0.1', port, servername: 'localhost', ca: certs.read(certs.caCert), ...options },
      () => {
        const result = { cipher: socket.getCipher().name, version: socket.getProtocol() ?? '' };
        socket.end();
        resolve(result);
      },
    );
    socket.on('error', (err) => resolve({ error: err.message }));
  });
}

async function plainUpstream(): Promise<TestUpstream> {
  upstream = await new TestUpstream(sampleFeatures()).start();
  return upstream;
}

/**
 * The built program serving plain HTTP and HTTPS (the test CA's certificate), once its HTTPS health
 * answers 200. Two fixed ports: another process may take one between `freePort` and the program's
 * bind (EADDRINUSE); then two other ports are tried, at most three times.
 */
async function startTls(
  extra: Record<string, string> = {},
): Promise<{ port: number; tlsPort: number; http: string; https: string }> {
  const up = await plainUpstream();
  for (let attempt = 1; ; attempt++) {
    const [port, tlsPort] = [await freePort(), await freePort()];
    program = startProgram({
      FLAGS_URL: up.url,
      FLAGS_API_TOKEN: up.token,
      FLAGS_PROXY_CLIENT_KEYS: KEY,
      PORT: String(port),
      TLS_ENABLE: 'true',
      TLS_SERVER_CERT: certs.serverCert,
      TLS_SERVER_KEY: certs.serverKey,
      TLS_SERVER_PORT: String(tlsPort),
      LOG_LEVEL: 'info',
      ...extra,
    });
    try {
      await waitForStatus(program, `https://127.0.0.1:${tlsPort}/proxy/health`, 200, {
        ca: certs.read(certs.caCert),
      });
      return { port, tlsPort, http: `http://127.0.0.1:${port}`, https: `https://127.0.0.1:${tlsPort}` };
    } catch (err) {
      if (attempt >= 3 || !program.output().includes('EADDRINUSE')) throw err;
      await program.kill();
    }
  }
}

describe('TLS serving (TLS_ENABLE)', () => {
  test('HTTPS on TLS_SERVER_PORT with a certificate made by openssl, plain HTTP beside it', async () => {
    const urls = await startTls();
    const ca = certs.read(certs.caCert);
    await waitForStatus(program as Program, `${urls.https}/proxy`, 200, { headers: asKey, ca });
    const secure = await request(`${urls.https}/proxy`, { headers: asKey, ca });
    expect(JSON.parse(secure.body)).toHaveProperty('toggles');
    expect((await request(`${urls.http}/proxy`, { headers: asKey })).status).toBe(200);
    // a client that does not trust the test CA refuses the certificate: it really is the one served
    await expect(request(`${urls.https}/proxy`, { headers: asKey })).rejects.toThrow(/certificate/i);
    expect(program?.output()).toMatch(/listening on port \d+ \(HTTP\) and \d+ \(HTTPS\)/);
  });

  test('REDIRECT_HTTP_TO_HTTPS: the plain port answers 308 to the same path and query on the HTTPS port', async () => {
    const urls = await startTls({ REDIRECT_HTTP_TO_HTTPS: 'true' });
    const ca = certs.read(certs.caCert);
    await waitForStatus(program as Program, `${urls.https}/proxy`, 200, { headers: asKey, ca });
    const redirected = await request(`${urls.http}/proxy?userId=7`, { headers: asKey });
    expect(redirected.status).toBe(308);
    expect(redirected.headers.location).toBe(`${urls.https}/proxy?userId=7`);
    const followed = await request(redirected.headers.location as string, { headers: asKey, ca });
    expect(followed.status).toBe(200);
    const noHost = await request(`${urls.http}/proxy`, { headers: { ...asKey, host: 'evil.example/x' } });
    expect(noHost.status).toBe(400);
  });

  test('with FLAGS_WORKERS every worker serves both ports', async () => {
    const urls = await startTls({ FLAGS_WORKERS: '2' });
    const ca = certs.read(certs.caCert);
    const workers = new Set<string>();
    await waitFor(async () => {
      try {
        const answer = await request(`${urls.https}/proxy/health`, { ca });
        if (answer.status === 200) workers.add(String(answer.headers['x-flags-proxy-worker']));
      } catch {
        /* not listening yet */
      }
      return workers.size === 2;
    }, 30_000);
    expect((await request(`${urls.http}/proxy`, { headers: asKey })).status).toBe(200);
  });

  test('TLS_ENABLE without a certificate stops start-up naming TLS_SERVER_CERT and TLS_SERVER_KEY', async () => {
    const up = await plainUpstream();
    program = startProgram({
      FLAGS_URL: up.url,
      FLAGS_API_TOKEN: up.token,
      FLAGS_PROXY_CLIENT_KEYS: KEY,
      PORT: String(await freePort()),
      TLS_ENABLE: 'true',
    });
    const { code, stderr } = await program.exited;
    expect(code).toBe(1);
    expect(stderr).toContain('TLS_ENABLE=true needs TLS_SERVER_CERT and TLS_SERVER_KEY');
  });
});

describe('TLS serving: forward secrecy, absolute-form targets, the redirect', () => {
  test('a TLS 1.2 cipher without forward secrecy is refused; ECDHE and TLS 1.3 are served', async () => {
    const { tlsPort } = await startTls();
    const tls12 = { maxVersion: 'TLSv1.2' } as const;
    for (const cipher of ['AES128-GCM-SHA256', 'AES256-GCM-SHA384', 'AES128-SHA256', 'AES128-SHA']) {
      expect(await handshake(tlsPort, { ...tls12, ciphers: cipher })).toHaveProperty('error');
    }
    expect(await handshake(tlsPort, { ...tls12, ciphers: 'ECDHE-RSA-AES128-GCM-SHA256' })).toEqual({
      cipher: 'ECDHE-RSA-AES128-GCM-SHA256',
      version: 'TLSv1.2',
    });
    expect(await handshake(tlsPort, { ...tls12, ciphers: 'ECDHE-RSA-CHACHA20-POLY1305' })).toEqual({
      cipher: 'ECDHE-RSA-CHACHA20-POLY1305',
      version: 'TLSv1.2',
    });
    expect(await handshake(tlsPort, { minVersion: 'TLSv1.3' })).toMatchObject({ version: 'TLSv1.3' });
    // what a client offering Node's defaults gets: forward secret
    const chosen = await handshake(tlsPort, tls12);
    expect(chosen).toMatchObject({ version: 'TLSv1.2', cipher: expect.stringMatching(/^ECDHE-/) });
  });

  test.each([
    ['the raw front', {}],
    ['the front inside Express (TRUST_PROXY)', { TRUST_PROXY: 'true' }],
  ])('an absolute-form request target is answered as its origin form, through %s', async (_way, extra) => {
    const { port } = await startTls(extra);
    const absolute = (target: string) =>
      rawRequest(
        port,
        `GET http://127.0.0.1:${port}${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: ${KEY}\r\nConnection: close\r\n\r\n`,
      );
    expect((await absolute('/api/frontend')).status).toBe(200);
    expect((await absolute('/proxy?userId=7')).status).toBe(200);
    expect((await absolute('/api/frontend/features/no-such-flag')).status).toBe(404);
    // what Express answers (no endpoint of the front): the same as in origin form
    expect((await absolute('/no/such/path')).status).toBe(404);
    const noKey = await rawRequest(
      port,
      `GET http://127.0.0.1:${port}/api/frontend HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
    );
    expect(noKey.status).toBe(401);
  });

  test('the HTTPS redirect keeps the path and query of an absolute-form target', async () => {
    const { port, tlsPort } = await startTls({ REDIRECT_HTTP_TO_HTTPS: 'true' });
    const answer = await rawRequest(
      port,
      `GET http://127.0.0.1:${port}/api/frontend?userId=7 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer.status).toBe(308);
    expect(answer.headers.get('location')).toBe(`https://127.0.0.1:${tlsPort}/api/frontend?userId=7`);
    const origin = await rawRequest(
      port,
      `GET /proxy/health?x=1 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
    );
    expect(origin.headers.get('location')).toBe(`https://127.0.0.1:${tlsPort}/proxy/health?x=1`);
    // the absolute form names the host, and wins over Host; a host with userinfo is never written
    const named = await rawRequest(
      port,
      `GET http://localhost:${port}/proxy HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
    );
    expect(named.headers.get('location')).toBe(`https://localhost:${tlsPort}/proxy`);
    const userinfo = await rawRequest(
      port,
      `GET http://evil.example@127.0.0.1:${port}/proxy HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
    );
    expect(userinfo.status).toBe(400);
  });

  test('REDIRECT_HTTP_TO_HTTPS without TLS_ENABLE stops start-up naming both', async () => {
    const up = await plainUpstream();
    program = startProgram({
      FLAGS_URL: up.url,
      FLAGS_API_TOKEN: up.token,
      FLAGS_PROXY_CLIENT_KEYS: KEY,
      PORT: '0',
      REDIRECT_HTTP_TO_HTTPS: 'true',
    });
    const { code, stderr, stdout } = await program.exited;
    expect(code).toBe(1);
    expect(stdout).not.toContain('listening');
    expect(stderr.trim().split('\n')).toEqual([
      'flags-proxy: cannot start: REDIRECT_HTTP_TO_HTTPS=true needs TLS_ENABLE=true (with TLS_SERVER_CERT and TLS_SERVER_KEY): without HTTPS there is nothing to redirect to',
    ]);
  });

  test.each([
    ['text that is no certificate', 'not a certificate\n', 'holds no PEM certificate'],
    ['an empty file', '', 'holds no PEM certificate'],
    ['a private key only', null, 'holds no PEM certificate'],
    [
      'a certificate block that does not parse',
      '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
      'certificate 1 of 1 in the file does not parse',
    ],
  ])(
    'UPSTREAM_CERTIFICATE_FILE holding %s stops start-up naming the variable',
    async (_what, content, why) => {
      const up = await plainUpstream();
      const file = content === null ? certs.serverKey : path.join(certs.dir, `ca-${Math.random()}.pem`);
      if (content !== null) writeFileSync(file, content);
      program = startProgram({
        FLAGS_URL: up.url,
        FLAGS_API_TOKEN: up.token,
        FLAGS_PROXY_CLIENT_KEYS: KEY,
        PORT: '0',
        UPSTREAM_CERTIFICATE_FILE: file,
      });
      const { code, stderr, stdout } = await program.exited;
      expect(code).toBe(1);
      expect(stdout).not.toContain('listening');
      const lines = stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^flags-proxy: cannot start: UPSTREAM_CERTIFICATE_FILE: /);
      expect(lines[0]).toContain(why);
    },
  );
});

/** A FIFO (no writer) beside the certificates. */
function fifoIn(dir: string): string {
  const fifo = path.join(dir, 'key.fifo');
  if (!existsSync(fifo)) execFileSync('mkfifo', [fifo]);
  return fifo;
}

describe('TLS files that cannot serve stop start-up', () => {
  test.each([
    [
      "one process, a key that is not the certificate's",
      '1',
      () => certs.clientKey,
      'TLS_SERVER_CERT / TLS_SERVER_KEY: not a usable certificate and key',
    ],
    [
      'a cluster primary, a missing key file (refused before any worker starts)',
      '2',
      () => '/nonexistent/server.key',
      'TLS_SERVER_KEY: cannot read "/nonexistent/server.key" (ENOENT)',
    ],
    [
      'one process, a key that is a FIFO with no writer (refused on its handle, never waited on)',
      '1',
      () => fifoIn(certs.dir),
      'key.fifo" (is a FIFO (named pipe), not a regular file)',
    ],
    [
      'one process, a key that is /dev/zero',
      '1',
      () => '/dev/zero',
      'TLS_SERVER_KEY: cannot read "/dev/zero" (is a character device, not a regular file)',
    ],
  ])('%s', async (_case, workers, key, message) => {
    const up = await plainUpstream();
    program = startProgram({
      FLAGS_URL: up.url,
      FLAGS_API_TOKEN: up.token,
      FLAGS_PROXY_CLIENT_KEYS: KEY,
      PORT: String(await freePort()),
      FLAGS_WORKERS: workers,
      LOG_LEVEL: 'info',
      TLS_ENABLE: 'true',
      TLS_SERVER_CERT: certs.serverCert,
      TLS_SERVER_KEY: key(),
    });
    const { code, stderr, stdout } = await program.exited;
    expect(code).toBe(1);
    expect(stderr).toContain(message);
    expect(stdout).not.toContain('worker 1 started');
  });
});

describe('mTLS towards an upstream that requires a client certificate', () => {
  async function mtlsUpstream(): Promise<TestUpstream> {
    upstream = await new TestUpstream(sampleFeatures()).start({
      cert: certs.read(certs.serverCert),
      key: certs.read(certs.serverKey),
      ca: certs.read(certs.caCert),
      requestCert: true,
      rejectUnauthorized: true,
    });
    return upstream;
  }

  async function startAgainst(up: TestUpstream, identity: Record<string, string>): Promise<string> {
    const port = await freePort();
    program = startProgram({
      FLAGS_URL: up.url,
      FLAGS_API_TOKEN: up.token,
      FLAGS_PROXY_CLIENT_KEYS: KEY,
      PORT: String(port),
      FLAGS_FETCH_INTERVAL: '500',
      UPSTREAM_CERTIFICATE_FILE: certs.caCert,
      ...identity,
    });
    return `http://127.0.0.1:${port}`;
  }

  test.each([
    [
      'PEM (PKCS8_CLIENT_CERTIFICATE_FILE + PKCS8_CLIENT_KEY_FILE)',
      () => ({
        PKCS8_CLIENT_CERTIFICATE_FILE: certs.clientCert,
        PKCS8_CLIENT_KEY_FILE: certs.clientKey,
      }),
    ],
    ['one PEM file (PEM_CERT_FILE)', () => ({ PEM_CERT_FILE: certs.clientPem })],
    [
      'PKCS#12 (PKCS12_IDENTITY_FILE + PKCS12_PASSPHRASE)',
      () => ({
        PKCS12_IDENTITY_FILE: certs.clientP12,
        PKCS12_PASSPHRASE: certs.p12Passphrase,
      }),
    ],
  ])('with a client identity as %s the proxy synchronises and serves', async (_form, identity) => {
    const up = await mtlsUpstream();
    const base = await startAgainst(up, identity());
    await waitForStatus(program as Program, `${base}/proxy`, 200, { headers: asKey });
    expect(up.featureRequests().length).toBeGreaterThan(0);
    expect(up.tlsClientErrors).toBe(0);
    expect(program?.output()).not.toContain(certs.p12Passphrase);
  });

  test('without a client identity the upstream refuses the handshake and the proxy stays not ready', async () => {
    const up = await mtlsUpstream();
    const base = await startAgainst(up, {});
    await waitFor(() => up.tlsClientErrors >= 2, 20_000);
    expect((await request(`${base}/proxy`, { headers: asKey })).status).toBe(503);
    expect(up.featureRequests()).toHaveLength(0);
  });

  test('without UPSTREAM_CERTIFICATE_FILE the upstream certificate (of the test CA) is not trusted', async () => {
    const up = await mtlsUpstream();
    const port = await freePort();
    program = startProgram({
      FLAGS_URL: up.url,
      FLAGS_API_TOKEN: up.token,
      FLAGS_PROXY_CLIENT_KEYS: KEY,
      PORT: String(port),
      FLAGS_FETCH_INTERVAL: '500',
      PEM_CERT_FILE: certs.clientPem,
    });
    await waitFor(() => up.tlsClientErrors >= 2, 20_000);
    expect((await request(`http://127.0.0.1:${port}/proxy`, { headers: asKey })).status).toBe(503);
    expect(up.featureRequests()).toHaveLength(0);
  });

  test('a wrong PKCS12_PASSPHRASE stops start-up naming PKCS12_IDENTITY_FILE, never the passphrase', async () => {
    const up = await mtlsUpstream();
    program = startProgram({
      FLAGS_URL: up.url,
      FLAGS_API_TOKEN: up.token,
      FLAGS_PROXY_CLIENT_KEYS: KEY,
      PORT: String(await freePort()),
      PKCS12_IDENTITY_FILE: certs.clientP12,
      PKCS12_PASSPHRASE: 'wrong-passphrase-123',
    });
    const { code, stderr, stdout } = await program.exited;
    expect(code).toBe(1);
    expect(stderr).toContain('PKCS12_IDENTITY_FILE: not a usable TLS client identity');
    expect(stderr + stdout).not.toContain('wrong-passphrase-123');
  });
});
