/**
 * The built program's command line, as Unleash Edge's: `edge`, `offline`, `health` and `ready` with
 * Edge's flags (each also read from its variable, a flag winning), `--help` and `--version`, and one
 * line naming anything it does not know.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { environmentWith, parseArguments } from '../../../src/proxy/command-line/parse-arguments';
import { PROBE_TIMEOUT_MS, probeTarget } from '../../../src/proxy/command-line/probe';
import { sampleFeatures } from '../../support/fixtures';
import { childPort, freePort } from '../../support/listen';
import { assertBuilt, BIN, makeCertificates } from '../../support/program';
import { waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';

const VERSION = (
  JSON.parse(readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as {
    version: string;
  }
).version;
const UPSTREAM_TOKEN = '*:development.cli-upstream-token-0123';
const WEB_KEY = 'cli-web-key';

interface Run {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

function run(args: string[], env: Record<string, string> = {}): Run {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: 'pipe',
  });
  children.push(child);
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** Runs to its end: exit code and output. */
async function finished(args: string[], env: Record<string, string> = {}) {
  const running = run(args, env);
  const code = await running.exited;
  return { code, output: running.output() };
}

/** Started (PORT=0) and answering its liveness path; its origin. */
async function serving(args: string[], env: Record<string, string>): Promise<Run & { origin: string }> {
  const running = run(args, { PORT: '0', LOG_LEVEL: 'info', ...env });
  const origin = `http://127.0.0.1:${await childPort(running.child, running.output)}`;
  await waitFor(
    () =>
      fetch(`${origin}/internal-backstage/health`).then(
        (r) => r.status === 200,
        () => false,
      ),
    20_000,
  );
  return { ...running, origin };
}

beforeAll(() => assertBuilt());

describe('--help and --version', () => {
  test.each([['--help'], ['-h'], ['help'], ['edge', '--help']])(
    '%s lists the commands and the variables that matter, exit 0',
    async (...args) => {
      const { code, output } = await finished(args);
      expect(code).toBe(0);
      for (const word of [
        'flags-proxy edge',
        'flags-proxy offline',
        'flags-proxy health',
        'flags-proxy ready',
        'FLAGS_URL',
        'UPSTREAM_URL',
        'TOKENS',
        '--upstream-url',
        '--bootstrap-file',
        '--edge-url',
        'EDGE_URL',
        '--ca-certificate-file',
        'RUST_LOG',
        'LOG_FORMAT',
      ])
        expect([word, output.includes(word)]).toEqual([word, true]);
    },
  );

  test.each([['--version'], ['-V']])('%s prints the version of package.json, exit 0', async (flag) => {
    expect(await finished([flag])).toEqual({ code: 0, output: `${VERSION}\n` });
  });
});

describe('what the program does not know', () => {
  test.each([
    [
      ['serve'],
      'flags-proxy: cannot start: Unknown command "serve": expected one of edge, offline, health, ready; usage: flags-proxy [edge|offline|health|ready]',
    ],
    [['edge', '--bogus', 'x'], 'flags-proxy: cannot start: Unknown flag --bogus for edge; usage:'],
    [['health', '--tokens', 'x'], 'flags-proxy: cannot start: Unknown flag --tokens for health; usage:'],
    [
      ['--upstream-url', 'x', 'edge'],
      'flags-proxy: cannot start: Unknown flag --upstream-url before the command; usage:',
    ],
    [['edge', '--upstream-url'], 'flags-proxy: cannot start: --upstream-url needs a value; usage:'],
    [['edge', 'extra'], 'flags-proxy: cannot start: Unexpected argument "extra" after edge'],
  ])('%p: one line naming it and the expected form, exit 1', async (args, line) => {
    const { code, output } = await finished(args);
    expect(code).toBe(1);
    expect(output.split('\n').filter((l) => l !== '')).toHaveLength(1);
    expect(output).toContain(line);
  });

  test("a malformed --tokens is named as the flag, with a token's form", async () => {
    const { code, output } = await finished([
      'edge',
      '-u',
      'http://127.0.0.1:9',
      '--tokens',
      '*:development',
    ]);
    expect(code).toBe(1);
    expect(output.trim()).toBe(
      'flags-proxy: cannot start: --tokens has no secret after its environment: each token is `<project>:<environment>.<secret>` (e.g. `*:production.a1b2c3`), comma-separated',
    );
  });
});

describe('`edge` with flags, and `health` / `ready` asking it', () => {
  let upstream: TestUpstream;
  beforeEach(async () => {
    upstream = await new TestUpstream(sampleFeatures(), UPSTREAM_TOKEN).start();
  });
  afterEach(async () => {
    await upstream.stop();
  });

  test("flags win over the environment's names; Edge's contract; health and ready answer 0 once synchronised", async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const edge = await serving(
      [
        'edge',
        '--upstream-url',
        upstream.url.replace(/\/api$/, ''),
        '-t',
        UPSTREAM_TOKEN,
        `--pretrusted-tokens=${WEB_KEY}@development`,
      ],
      // what the flags replace: another upstream and tokens under both contracts' names
      { FLAGS_URL: `${dead}/api`, TOKENS: '*:development.not-this-one', FLAGS_API_TOKEN: 'nor-this' },
    );
    await waitFor(
      async () => (await fetch(`${edge.origin}/internal-backstage/ready`)).status === 200,
      20_000,
    );
    expect(edge.output()).toContain("Unleash Edge's contract");
    const all = await fetch(`${edge.origin}/api/frontend/all`, { headers: { authorization: WEB_KEY } });
    expect(all.status).toBe(200);

    const port = new URL(edge.origin).port;
    for (const [args, env] of [
      [['health', '--edge-url', edge.origin], {}],
      [['health', '-e', edge.origin], {}],
      [['ready'], { EDGE_URL: edge.origin }],
      // no EDGE_URL: this container's PORT, as a probe run inside it finds it
      [['ready'], { PORT: port }],
      [['health'], { PORT: port }],
      // a flag wins over the variable
      [['ready', '--edge-url', edge.origin], { EDGE_URL: dead }],
    ] as const) {
      const { code, output } = await finished([...args], env);
      expect([args, env, code]).toEqual([args, env, 0]);
      expect(output).toMatch(
        /^flags-proxy (health|ready): http:\/\/.*\/internal-backstage\/(health|ready) answered 200 \{"status":"(OK|READY)"\}\n$/,
      );
    }
    const wrongPlace = await finished(['ready', '--edge-url', dead]);
    expect(wrongPlace.code).toBe(1);
    expect(wrongPlace.output).toContain(`${dead}/internal-backstage/ready: ECONNREFUSED`);
    edge.child.kill('SIGTERM');
    expect(await edge.exited).toBe(0);
  }, 60_000);

  test('before the first synchronisation: health 0, ready 1 naming what it answered', async () => {
    const edge = await serving(
      [
        'edge',
        '-u',
        `http://127.0.0.1:${await freePort()}`,
        '-t',
        UPSTREAM_TOKEN,
        '-p',
        `${WEB_KEY}@development`,
      ],
      {},
    );
    expect((await finished(['health', '-e', edge.origin])).code).toBe(0);
    const ready = await finished(['ready', '-e', edge.origin]);
    expect(ready.code).toBe(1);
    expect(ready.output).toMatch(
      /internal-backstage\/ready answered 503 \{.*"status":"NOT_READY".*\(expected 200 \{"status":"READY"\}\)/,
    );
  }, 60_000);
});

describe('`health` and `ready` against other answers', () => {
  const servers: Array<http.Server | net.Server> = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) {
      if ('closeAllConnections' in server) server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
  const answering = async (status: number, body: string): Promise<string> => {
    const server = http.createServer((_req, res) => res.writeHead(status).end(body));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  test.each([
    ['health', 200, '{"status":"NOT_READY"}'],
    ['health', 503, '{"status":"OK"}'],
    ['ready', 200, '{"status":"OK"}'],
    ['ready', 200, 'READY'],
    ['health', 200, '<html>'],
  ])('%s exits 1 on %d %s', async (command, status, body) => {
    const url = await answering(status, body);
    const { code, output } = await finished([command, '--edge-url', url]);
    expect(code).toBe(1);
    expect(output).toContain(`answered ${status}`);
  });

  test('an instance that never answers: exit 1 within the timeout, well under the probe’s 10 s', async () => {
    // accepts and never reads nor answers (its sockets destroyed at the end, or it would never close)
    const held: net.Socket[] = [];
    const silent = net.createServer((socket) => void held.push(socket));
    servers.push(silent);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const began = Date.now();
    const { code, output } = await finished(['health', '--edge-url', url]);
    for (const socket of held) socket.destroy();
    expect(held).toHaveLength(1);
    expect(code).toBe(1);
    expect(output).toContain(`no answer within ${PROBE_TIMEOUT_MS / 1000} s`);
    expect(Date.now() - began).toBeLessThan(10_000);
  }, 20_000);

  test('an https instance is trusted through --ca-certificate-file (or CA_CERTIFICATE_FILE), not without', async () => {
    const certs = makeCertificates();
    try {
      const server = https.createServer(
        { cert: certs.read(certs.serverCert), key: certs.read(certs.serverKey) },
        (_req, res) => res.writeHead(200).end('{"status":"OK"}'),
      );
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = `https://localhost:${(server.address() as AddressInfo).port}`;
      expect((await finished(['health', '-e', url, '--ca-certificate-file', certs.caCert])).code).toBe(0);
      expect((await finished(['health', '-e', url], { CA_CERTIFICATE_FILE: certs.caCert })).code).toBe(0);
      const untrusted = await finished(['health', '-e', url]);
      expect(untrusted.code).toBe(1);
      expect(untrusted.output).toMatch(/SELF_SIGNED|UNABLE_TO_VERIFY|unable to verify/i);
      const missing = await finished(['health', '-e', url, '-c', path.join(certs.dir, 'none.pem')]);
      expect(missing.code).toBe(1);
      expect(missing.output).toContain('--ca-certificate-file');
    } finally {
      certs.remove();
    }
  }, 30_000);
});

describe('`offline` by subcommand', () => {
  test("runs under Edge's contract, as BOOTSTRAP_FILE alone does: /all on", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'flags-proxy-cli-'));
    try {
      const file = path.join(dir, 'features.json');
      writeFileSync(file, JSON.stringify({ 'cli-flag': { enabled: true } }));
      const offline = await serving(['offline', '-b', file, '--frontend-tokens', WEB_KEY], {});
      expect(offline.output()).toContain("Unleash Edge's contract");
      const all = await fetch(`${offline.origin}/api/frontend/all`, { headers: { authorization: WEB_KEY } });
      expect(all.status).toBe(200);
      expect(((await all.json()) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name)).toEqual(
        ['cli-flag'],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe('what health and ready ask, and what a flag replaces', () => {
  test.each([
    [{}, 'http://localhost:3063/internal-backstage/health'],
    [{ PORT: '4000' }, 'http://localhost:4000/internal-backstage/health'],
    [{ PORT: '4000', BASE_PATH: 'edge/' }, 'http://localhost:4000/edge/internal-backstage/health'],
    [
      { EDGE_URL: 'https://edge.example:8443/base/', PORT: '4000' },
      'https://edge.example:8443/base/internal-backstage/health',
    ],
  ])('%p asks %s', (env, url) => {
    expect(probeTarget(env, 'health')).toBe(url);
  });

  test('a flag wins over its variable, the other names of its option, and our names that would win', () => {
    const env = environmentWith(
      {
        TOKENS: 'env-token',
        FLAGS_API_TOKEN: 'ours',
        FLAGS_FETCH_INTERVAL: '1000',
        JSON_LOGGER: 'false',
        PORT: '4000',
      },
      parseArgumentsVariables(['edge', '-t', 'flag-token', '-f', '30', '--log-format', 'json']),
    );
    expect(env).toEqual({
      TOKENS: 'flag-token',
      FEATURES_REFRESH_INTERVAL_SECONDS: '30',
      LOG_FORMAT: 'json',
      PORT: '4000',
    });
  });
});

function parseArgumentsVariables(args: string[]): Record<string, string> {
  const command = parseArguments(args);
  if (command.kind !== 'serve') throw new Error(`expected a serve command, got ${command.kind}`);
  return command.variables;
}
