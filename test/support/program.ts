import { spawn, type ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { listeningPortsOf } from './listen';
import { waitFor } from './proxy';

/** The built program, started exactly as `npm start` does; `npm test` builds first (pretest). */
export const BIN = path.resolve(__dirname, '../../dist/src/bin/flags-proxy.js');

export function assertBuilt(): void {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm test does it first)`);
}

export interface Program {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** Kills it (if running) and waits for its exit. */
  kill: () => Promise<void>;
}

/** Starts the built program with exactly `env` (and PATH). */
export function startProgram(env: Record<string, string>): Program {
  const child = spawn(process.execPath, [BIN], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: 'pipe',
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, stdout, stderr })),
  );
  return {
    child,
    output: () => stdout + stderr,
    exited,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** https: the CA to trust. */
  ca?: Buffer;
}

/** One request on its own connection. */
export function request(url: string, opts: RequestOptions = {}): Promise<Answer> {
  const target = new URL(url);
  const client = target.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(
      target,
      {
        method: opts.method ?? 'GET',
        agent: false,
        headers: { connection: 'close', ...opts.headers },
        ...(opts.ca ? { ca: opts.ca } : {}),
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.setTimeout(5000, () => req.destroy(new Error(`${url} timed out`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}

/**
 * Waits until `url` answers `status` (connection errors count as not yet), else says what the
 * program printed. Only the program's own answers count: `url` is asked once the program listens
 * on its port (another test's server may hold a port picked beforehand: the program then exits).
 */
export async function waitForStatus(
  program: Program,
  url: string,
  status: number,
  opts: RequestOptions = {},
  timeoutMs = 20_000,
): Promise<void> {
  const { child } = program;
  const port = Number(new URL(url).port);
  try {
    await waitFor(async () => {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error('the program exited');
      if (port > 0 && (child.pid === undefined || !listeningPortsOf(child.pid).includes(port))) return false;
      try {
        return (await request(url, opts)).status === status;
      } catch {
        return false;
      }
    }, timeoutMs);
  } catch (error) {
    throw new Error(`${url} did not answer ${status}; the program printed:\n${program.output()}`, {
      cause: error,
    });
  }
}

/** Certificates made with `openssl` in a temporary folder: a CA, a server and a client certificate. */
export interface TestCertificates {
  dir: string;
  caCert: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  /** PKCS#8 PEM key of `clientCert`. */
  clientKey: string;
  /** `clientKey` and `clientCert` in one PEM file. */
  clientPem: string;
  /** `clientCert` and its key as PKCS#12, locked with `p12Passphrase`. */
  clientP12: string;
  p12Passphrase: string;
  read(file: string): Buffer;
  remove(): void;
}

export function makeCertificates(): TestCertificates {
  const dir = mkdtempSync(path.join(tmpdir(), 'flags-proxy-certs-'));
  const at = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=flags-proxy test CA',
  );
  const sign = (name: string, subject: string, ext: string) => {
    openssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      subject,
    );
    writeFileSync(at(`${name}.ext`), ext);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
  };
  sign('server', '/CN=localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  sign('client', '/CN=flags-proxy test client', 'extendedKeyUsage=clientAuth\n');
  // openssl writes PKCS#8 keys ("BEGIN PRIVATE KEY") with -newkey; say so explicitly all the same.
  openssl('pkcs8', '-topk8', '-nocrypt', '-in', 'client.key', '-out', 'client.pkcs8.key');
  writeFileSync(
    at('client-bundle.pem'),
    Buffer.concat([readFileSync(at('client.pkcs8.key')), readFileSync(at('client.pem'))]),
  );
  const p12Passphrase = 'p12-test-passphrase';
  openssl(
    'pkcs12',
    '-export',
    '-in',
    'client.pem',
    '-inkey',
    'client.key',
    '-out',
    'client.p12',
    '-passout',
    `pass:${p12Passphrase}`,
  );
  return {
    dir,
    caCert: at('ca.pem'),
    serverCert: at('server.pem'),
    serverKey: at('server.key'),
    clientCert: at('client.pem'),
    clientKey: at('client.pkcs8.key'),
    clientPem: at('client-bundle.pem'),
    clientP12: at('client.p12'),
    p12Passphrase,
    read: (file) => readFileSync(file),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
