import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { sampleFeatures } from '../support/fixtures';
import { freePort } from '../support/listen';
import {
  assertBuilt,
  makeCertificates,
  request,
  startProgram,
  waitForStatus,
  type Program,
  type TestCertificates,
} from '../support/program';
import { waitFor } from '../support/proxy';
import { TestUpstream } from '../support/upstream';

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

async function plainUpstream(): Promise<TestUpstream> {
  upstream = await new TestUpstream(sampleFeatures()).start();
  return upstream;
}

describe('TLS serving (TLS_ENABLE)', () => {
  async function startTls(extra: Record<string, string> = {}): Promise<{ http: string; https: string }> {
    const up = await plainUpstream();
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
    return { http: `http://127.0.0.1:${port}`, https: `https://127.0.0.1:${tlsPort}` };
  }

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
