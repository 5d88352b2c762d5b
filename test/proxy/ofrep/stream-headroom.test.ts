import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { sampleFeatures } from '../../support/fixtures';
import { waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';
import { childPort } from '../../support/listen';

// Change streams leave file descriptors for everything else (README "Change notifications"): the
// stream limit is at most half the process's soft RLIMIT_NOFILE. Runs the built program under
// `ulimit -n 400` (`npm test` builds first).
const BIN = path.resolve(__dirname, '../../../dist/src/bin/flags-proxy.js');
const KEY = 'headroom-key';

jest.setTimeout(120_000);

let upstream: TestUpstream;
let child: ChildProcess | undefined;
const streams: http.ClientRequest[] = [];

beforeAll(() => {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build (npm test does it first)`);
});
beforeEach(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
});
afterEach(async () => {
  for (const s of streams.splice(0)) s.destroy();
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child?.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
  child = undefined;
  await upstream.stop();
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request on its own connection; a 200 stream is kept open (its request is in `streams`). */
function open(port: number, pathname: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: pathname, agent: false, headers: { authorization: KEY } },
      (res) => {
        if (res.headers['content-type']?.startsWith('text/event-stream')) {
          streams.push(req);
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' });
          return;
        }
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.setTimeout(5_000, () => req.destroy(new Error(`${pathname} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

test('under ulimit -n 400, streams are refused with 503 before descriptors run out, and health and evaluation keep answering', async () => {
  child = spawn('bash', ['-c', `ulimit -n 400; exec "${process.execPath}" "${BIN}"`], {
    env: {
      PATH: process.env.PATH ?? '',
      FLAGS_URL: upstream.url,
      FLAGS_API_TOKEN: upstream.token,
      FLAGS_PROXY_CLIENT_KEYS: KEY,
      PORT: '0',
      FLAGS_METRICS_INTERVAL: '600000',
      LOG_LEVEL: 'warn',
    },
    stdio: 'ignore',
  });
  const port = await childPort(child);
  await waitFor(async () => {
    try {
      return (await open(port, '/proxy/health')).status === 200;
    } catch {
      return false;
    }
  }, 30_000);

  let refusal: Answer | undefined;
  for (let i = 0; i < 400 && refusal === undefined; i++) {
    const answer = await open(port, '/ofrep/v1/flag-changes');
    if (answer.status !== 200) refusal = answer;
  }
  expect(refusal?.status).toBe(503);
  expect(refusal?.headers['retry-after']).toBeDefined();
  expect(JSON.parse(refusal?.body ?? '{}')).toMatchObject({
    name: 'NotReady',
    message: expect.stringContaining('Too many open change streams (200'),
  });
  expect(streams.length).toBe(200);

  for (let i = 0; i < 20; i++) {
    expect((await open(port, '/proxy/health')).status).toBe(200);
    expect((await open(port, '/proxy?userId=alice')).status).toBe(200);
  }
});
