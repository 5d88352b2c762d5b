/**
 * A real shared cache in front of the proxy: nginx's `proxy_cache`, configured as a stock reverse
 * proxy (no `proxy_cache_valid`, so the proxy's `Cache-Control: public, max-age=2` decides what is
 * stored and for how long). Answers depend on the key's environment, so the cache must keep one
 * entry per key (the key's header in `Vary`): one key's answer is never served to another key, nor to
 * a request without a key, which the proxy answers 401.
 *
 * nginx is installed by `.ci/run`; without it the file is skipped with a printed reason, except
 * under `CI=true`, where its absence fails the run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ProxyApp } from '../../../src/proxy/app';
import { LoopbackServers } from '../../support/listen';
import { proxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

const UP_DEV = '*:development.upstream-dev-secret';
const UP_PROD = '*:production.upstream-prod-secret';
const on = (name: string) => ({ name, enabled: true, project: 'default', strategies: [{ name: 'default' }] });
const DEV: FeaturesPayload = { version: 2, features: [on('dev-flag'), on('shared-flag')] };
const PROD: FeaturesPayload = { version: 2, features: [on('prod-flag'), on('shared-flag')] };

/** The nginx binary: on the PATH, or where Debian puts it (`/usr/sbin` is not on every user's PATH). */
function findNginx(): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/local/sbin'];
  for (const dir of dirs) {
    if (dir === '') continue;
    const candidate = path.join(dir, 'nginx');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not there
    }
  }
  return undefined;
}

const NGINX = findNginx();
const UNDER_CI = process.env.CI === 'true';
if (NGINX === undefined && !UNDER_CI)
  console.warn(
    'shared-cache.test.ts skipped: nginx is not installed (CI installs it; `apt-get install nginx-light`)',
  );
const describeWithNginx = NGINX !== undefined || UNDER_CI ? describe : describe.skip;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function get(url: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
  });
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A stock caching reverse proxy in front of `upstreamUrl`; every path in `dir`. */
function nginxConf(dir: string, port: number, upstreamUrl: string): string {
  return `
daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 64; }
http {
  access_log ${dir}/access.log;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy_temp;
  fastcgi_temp_path ${dir}/fastcgi_temp;
  uwsgi_temp_path ${dir}/uwsgi_temp;
  scgi_temp_path ${dir}/scgi_temp;
  proxy_cache_path ${dir}/cache levels=1:2 keys_zone=flags:1m max_size=16m inactive=1m use_temp_path=off;
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass ${upstreamUrl};
      proxy_cache flags;
      add_header X-Cache-Status $upstream_cache_status always;
    }
  }
}
`;
}

const names = (answer: Answer): string[] =>
  (JSON.parse(answer.body) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name).sort();

describeWithNginx('behind a shared cache (nginx proxy_cache)', () => {
  let upstream: TestUpstream | undefined;
  let app: ProxyApp | undefined;
  const servers = new LoopbackServers();
  let dir: string;
  let nginx: ChildProcess | undefined;
  let cacheUrl: string;

  beforeAll(async () => {
    if (NGINX === undefined) throw new Error('nginx is not installed, and CI=true requires it');
    upstream = await new TestUpstream(DEV, UP_DEV).start();
    upstream.addToken(UP_PROD, PROD);
    app = proxyFor(upstream, {
      flagsApiToken: `${UP_DEV},${UP_PROD}`,
      clientKeys: ['dev-key@development', 'prod-key@production'],
    });
    await app.whenReady();
    const proxyUrl = await servers.listen(app);
    dir = mkdtempSync(path.join(tmpdir(), 'flags-proxy-nginx-'));
    const port = await freePort();
    writeFileSync(path.join(dir, 'nginx.conf'), nginxConf(dir, port, proxyUrl));
    let output = '';
    nginx = spawn(NGINX, ['-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', path.join(dir, 'error.log')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    nginx.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    nginx.stderr?.on('data', (c: Buffer) => (output += c.toString()));
    let exited = false;
    nginx.once('exit', () => (exited = true));
    cacheUrl = `http://127.0.0.1:${port}`;
    await waitFor(async () => {
      if (exited) throw new Error(`nginx exited at start: ${output}`);
      try {
        // a path the proxy answers without a key, never cached (no Cache-Control)
        return (await get(`${cacheUrl}/proxy/health`)).status === 200;
      } catch {
        return false;
      }
    }, 10_000);
  }, 30_000);

  afterAll(async () => {
    if (nginx?.pid !== undefined && nginx.exitCode === null && nginx.signalCode === null) {
      const exited = once(nginx, 'exit');
      process.kill(nginx.pid, 'SIGTERM');
      await exited;
    }
    await servers.closeAll();
    await app?.close();
    await upstream?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("one key's answer is never served to another key, nor to a request without a key", async () => {
    const path = `${cacheUrl}/proxy?userId=u1`;
    const prod = { authorization: 'prod-key' };
    const dev = { authorization: 'dev-key' };
    // The cache is active: a repeated request of the production key is a HIT with its own answer
    // (retried while the 2 s freshness runs out between the two requests on a slow machine).
    let hit: Answer | undefined;
    for (let attempt = 0; attempt < 10 && hit === undefined; attempt += 1) {
      const first = await get(path, prod);
      expect(first.status).toBe(200);
      const again = await get(path, prod);
      expect([again.status, names(again)]).toEqual([200, ['prod-flag', 'shared-flag']]);
      if (again.headers['x-cache-status'] === 'HIT') hit = again;
    }
    expect(hit?.headers['x-cache-status']).toBe('HIT');
    expect(hit?.headers.vary).toBe('Accept-Encoding, Authorization');

    // right after: the development key gets its own environment's answer, not the cached one
    const other = await get(path, dev);
    expect([other.status, names(other)]).toEqual([200, ['dev-flag', 'shared-flag']]);
    expect(other.headers['x-cache-status']).not.toBe('HIT');
    // and a request without a key is refused by the proxy, not answered from the cache
    const keyless = await get(path);
    expect(keyless.status).toBe(401);
    expect(keyless.body).not.toContain('prod-flag');
    const wrongKey = await get(path, { authorization: 'not-a-key' });
    expect(wrongKey.status).toBe(401);

    // each key still has its own entry: the development key's repeat is served from the cache too
    let devHit: Answer | undefined;
    for (let attempt = 0; attempt < 10 && devHit === undefined; attempt += 1) {
      await get(path, dev);
      const again = await get(path, dev);
      expect([again.status, names(again)]).toEqual([200, ['dev-flag', 'shared-flag']]);
      if (again.headers['x-cache-status'] === 'HIT') devHit = again;
    }
    expect(devHit?.headers['x-cache-status']).toBe('HIT');
  });
});
