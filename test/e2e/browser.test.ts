/**
 * A real browser: headless Chromium runs the real frontend SDK's browser build
 * (`unleash-proxy-client`'s `main.min.js`) and OpenFeature's remote protocol by `fetch` against the
 * proxy on a loopback socket. Chromium sends its own `Accept-Encoding`, so the answers it decodes are
 * the Brotli bytes of `compression/body-encoding.ts` (kept ones included); the test also checks, on the
 * proxy's side, what Chromium asked for and what was sent.
 *
 * Chromium comes from Debian's `chromium` package, which `.ci/run` installs; without it (a developer
 * machine) this suite says so and checks nothing, except under `CI=true`, where it fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ProxyApp } from '../../src/proxy/app';
import { CLIENT_KEY, readyProxyFor } from '../support/proxy';
import { togglesByUser } from '../support/fixtures';
import { TestUpstream } from '../support/upstream';
import { CHROMIUM, CHROMIUM_ARGS, describeWithChromium } from '../support/chromium';

const describeBrowser = describeWithChromium('browser.test.ts');

/** Stops a child process and waits until it has exited (killed outright after 5 s). */
async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill();
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

const NAMES = Array.from({ length: 150 }, (_, i) => `toggle-${String(i).padStart(3, '0')}`);

/** 150 toggles; user-k has the toggles i with i % 5 === k enabled: an answer of several KB. */
const payload = togglesByUser(NAMES.length, 5);

// the package's browser build (its `exports` name only the Node entry, in the same folder)
const SDK = readFileSync(
  path.join(path.dirname(require.resolve('unleash-proxy-client')), 'main.min.js'),
  'utf8',
);

/** The page: the SDK for user-3 (started twice, so the second answer is a kept one), then OFREP's bulk answer. */
function page(proxyUrl: string): string {
  return `<!doctype html><html><body><script src="/sdk.js"></script><script>
(async () => {
  const result = {};
  try {
    for (const round of [1, 2]) {
      const client = new unleash.UnleashClient({
        url: '${proxyUrl}/proxy', clientKey: '${CLIENT_KEY}', appName: 'browser-' + round,
        refreshInterval: 0, metricsInterval: 0, disableMetrics: true, context: { userId: 'user-3' },
      });
      await client.start();
      result['sdk' + round] = client.getAllToggles().map((t) => t.name);
      client.stop();
    }
    const flags = await fetch('${proxyUrl}/ofrep/v1/evaluate/flags', {
      method: 'POST',
      headers: { Authorization: '${CLIENT_KEY}', 'Content-Type': 'application/json' },
      body: JSON.stringify({ context: { targetingKey: 'user-4' } }),
    });
    const body = await flags.json();
    result.ofrep = { status: flags.status, on: body.flags.filter((f) => f.value === true).map((f) => f.key) };
  } catch (err) {
    result.error = String(err);
  }
  await fetch('/result', { method: 'POST', body: JSON.stringify(result) });
})();
</script></body></html>`;
}

interface Seen {
  path: string;
  acceptEncoding: string | undefined;
  status: number;
  contentEncoding: string | undefined;
}

describeBrowser('a real browser (headless Chromium)', () => {
  const upstream = new TestUpstream(payload);
  let app: ProxyApp;
  let proxyServer: http.Server;
  let appServer: http.Server;
  let pageServer: http.Server;
  let chromium: ChildProcess | undefined;
  let profile: string;
  const seen: Seen[] = [];

  beforeAll(async () => {
    await upstream.start();
    pageServer = http.createServer();
    await new Promise<void>((resolve) => pageServer.listen(0, '127.0.0.1', () => resolve()));
    const pageOrigin = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;
    app = await readyProxyFor(upstream, { cors: { origin: pageOrigin } });
    // The proxy serves on its own port; the browser talks to a pass-through in front of it that
    // records what went over the wire (the answers' headers as the proxy wrote them).
    appServer = http.createServer(app.listener);
    await new Promise<void>((resolve) => appServer.listen(0, '127.0.0.1', () => resolve()));
    const appPort = (appServer.address() as AddressInfo).port;
    proxyServer = http.createServer((req, res) => {
      const forward = http.request(
        { host: '127.0.0.1', port: appPort, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          if (req.method !== 'OPTIONS') {
            const encoding = answer.headers['content-encoding'];
            seen.push({
              path: req.url ?? '',
              acceptEncoding: req.headers['accept-encoding'],
              status: answer.statusCode ?? 0,
              contentEncoding: typeof encoding === 'string' ? encoding : undefined,
            });
          }
          res.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.destroy());
      req.pipe(forward);
    });
    await new Promise<void>((resolve) => proxyServer.listen(0, '127.0.0.1', () => resolve()));
    profile = mkdtempSync(path.join(tmpdir(), 'flags-proxy-chromium-'));
  });

  afterAll(async () => {
    // Chromium writes its profile until it has exited: stopped first, then its folder removed
    await stopProcess(chromium);
    await new Promise<void>((resolve) => proxyServer.close(() => resolve()));
    await new Promise<void>((resolve) => appServer.close(() => resolve()));
    await new Promise<void>((resolve) => pageServer.close(() => resolve()));
    await app.close();
    await upstream.stop();
    rmSync(profile, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
  });

  test('the frontend SDK and OFREP decode the compressed answers Chromium asked for', async () => {
    const proxyUrl = `http://127.0.0.1:${(proxyServer.address() as AddressInfo).port}`;
    const result = new Promise<Record<string, unknown>>((resolve) => {
      pageServer.on('request', (req, res) => {
        if (req.url === '/sdk.js') {
          res.writeHead(200, { 'content-type': 'text/javascript' }).end(SDK);
        } else if (req.url === '/result') {
          let body = '';
          req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
          req.on('end', () => {
            res.end();
            resolve(JSON.parse(body) as Record<string, unknown>);
          });
        } else {
          res.writeHead(200, { 'content-type': 'text/html' }).end(page(proxyUrl));
        }
      });
    });
    const pageUrl = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}/`;
    chromium = spawn(
      CHROMIUM,
      ['--headless', ...CHROMIUM_ARGS, '--remote-debugging-port=0', `--user-data-dir=${profile}`, pageUrl],
      { stdio: 'ignore' },
    );
    const answers = await result;

    const expected = (user: number) => NAMES.filter((_, i) => i % 5 === user);
    expect(answers.error).toBeUndefined();
    expect(answers.sdk1).toEqual(expected(3));
    expect(answers.sdk2).toEqual(expected(3));
    expect(answers.ofrep).toEqual({ status: 200, on: expected(4) });

    // what reached the proxy: Chromium's own Accept-Encoding, answered in Brotli every time
    const answered = seen.filter((s) => s.path.startsWith('/proxy') || s.path.startsWith('/ofrep'));
    expect(answered.map((s) => s.path.split('?')[0])).toEqual([
      '/proxy',
      '/proxy',
      '/ofrep/v1/evaluate/flags',
    ]);
    for (const s of answered) {
      expect(s.acceptEncoding).toMatch(/\bbr\b/);
      expect(s.status).toBe(200);
      expect(s.contentEncoding).toBe('br');
    }
  }, 60_000);
});
