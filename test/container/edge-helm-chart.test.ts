/**
 * Unleash Edge's Helm chart, run as it is with only the image swapped for ours: the container spec
 * the chart renders from its default values (args `[edge]`, `UPSTREAM_URL`, `RUST_LOG=warn`,
 * `LOG_FORMAT=json`, `envFrom` a Secret holding `TOKENS`, port 3063, exec probes
 * `/app/unleash-edge health`) run through the Dockerfile's runtime stage (only what it copies, its
 * ENTRYPOINT with the chart's args, as a non-root user), and the probes executed as the kubelet
 * executes them (the command in the container's environment, its exit code, killed at
 * `timeoutSeconds`), before and after the first synchronisation with the upstream.
 *
 * The one change a shared test machine needs: `PORT` names a free port standing for the chart's
 * 3063 (which the probes, run in the container's environment, find the same way); the proxy's own
 * default under this environment is checked to be 3063.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { silentLogger } from '../../src/common/logging/logger';
import { probeTarget } from '../../src/proxy/command-line/probe';
import { parseConfig } from '../../src/proxy/config/parse-config';
import { startBuiltProxy, type BuiltProxy } from '../support/built-proxy';
import { sampleFeatures } from '../support/fixtures';
import { freePort } from '../support/listen';
import { waitFor } from '../support/proxy';
import { TestUpstream } from '../support/upstream';
import { runtimeStage } from './dockerfile';
import {
  EDGE_CHART_DEFAULTS,
  renderContainer,
  type ContainerSpec,
  type EdgeChartValues,
} from './edge-helm-chart';
import { NOBODY, nonRootWrapper, stageImage, type ImageFolder } from './image-folder';

const ROOT = path.resolve(__dirname, '../..');
const DOCKERFILE = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
const VERSION = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;
const CLIENT_TOKEN = '*:development.chart-client-token-0123456789';
const SECRET_NAME = 'unleash-edge-tokens';

/** An Edge user's values: the chart's defaults, their Unleash and their tokens' Secret. */
const edgeUsersValues = (upstreamUrl: string): EdgeChartValues => ({
  ...EDGE_CHART_DEFAULTS,
  edge: { ...EDGE_CHART_DEFAULTS.edge, upstreamUrl },
  existingSecrets: SECRET_NAME,
});
/** The move: the image, and nothing else. */
const moved = (values: EdgeChartValues): EdgeChartValues => ({
  ...values,
  image: { repository: 'flags-proxy', tag: VERSION },
});

let image: ImageFolder;
let upstream: TestUpstream;
let proxy: BuiltProxy | undefined;
const forwarders: net.Server[] = [];
const forwarded: net.Socket[] = [];

beforeAll(async () => {
  if (!existsSync(path.join(ROOT, 'dist/src/bin/flags-proxy.js')))
    throw new Error('dist/ is missing: run npm run build first (the build stage of the Dockerfile)');
  upstream = await new TestUpstream(sampleFeatures(), CLIENT_TOKEN).start();
  image = await stageImage(ROOT, DOCKERFILE, runtimeStage(DOCKERFILE));
}, 300_000);

afterAll(async () => {
  await proxy?.stop();
  for (const socket of forwarded) socket.destroy();
  for (const server of forwarders) await new Promise((resolve) => server.close(resolve));
  await upstream?.stop();
  if (image) await rm(image.folder, { recursive: true, force: true });
});

/** Makes `port` reach the upstream from now on: the upstream "comes up" there. */
async function upstreamComesUpOn(port: number): Promise<void> {
  const target = (upstream.url.match(/:(\d+)\//) ?? [])[1];
  const server = net.createServer((socket) => {
    const out = net.connect(Number(target), '127.0.0.1');
    forwarded.push(socket, out);
    socket.pipe(out).pipe(socket);
    socket.on('error', () => out.destroy());
    out.on('error', () => socket.destroy());
  });
  forwarders.push(server);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
}

/** The container's environment: the image's ENV, the spec's env, then its envFrom Secret's keys. */
function containerEnv(spec: ContainerSpec, secrets: Record<string, Record<string, string>>) {
  const env: Record<string, string> = { ...image.stage.env };
  for (const { name, value } of spec.env) env[name] = value;
  for (const { secretRef } of spec.envFrom) Object.assign(env, secrets[secretRef.name]);
  return env;
}

/**
 * An exec probe as the kubelet runs it: the command in the container (its filesystem, user and
 * environment), success only on exit code 0, a failure when it outlives `timeoutSeconds`.
 */
function execProbe(
  probe: ContainerSpec['livenessProbe'],
  env: Record<string, string>,
  wrapper: string[] | undefined,
): Promise<{ code: number | null; timedOut: boolean; output: string }> {
  const command = [...(wrapper ?? []), ...probe.exec.command.map(image.inImage)];
  return new Promise((resolve) => {
    const child = spawn(command[0], command.slice(1), {
      cwd: image.app,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: 'pipe',
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, probe.timeoutSeconds * 1000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, timedOut, output });
    });
  });
}

test('the image holds Edge’s path of the program, executable, and it is the same program', async () => {
  const script = image.inImage('/app/unleash-edge');
  expect(statSync(script).mode & 0o111).not.toBe(0);
  const version = await execProbe(
    { ...EDGE_CHART_DEFAULTS.livenessProbe, exec: { command: ['/app/unleash-edge', '--version'] } },
    {},
    undefined,
  );
  expect(version).toEqual({ code: 0, timedOut: false, output: `${VERSION}\n` });
  expect(image.stage.entrypoint).toEqual(['node', '/app/dist/src/bin/flags-proxy.js']);
  expect(image.stage.cmd).toEqual([]);
});

test('only image.repository and image.tag change between Edge’s container and ours', () => {
  const values = edgeUsersValues('http://unleash.unleash:4242');
  const edge = renderContainer(values);
  const ours = renderContainer(moved(values));
  expect({ ...ours, image: undefined }).toEqual({ ...edge, image: undefined });
  expect([edge.image, ours.image]).toEqual(['unleashorg/unleash-edge:v20.1.10', `flags-proxy:${VERSION}`]);
  // what the chart's defaults give the container
  expect(ours.args).toEqual(['edge']);
  expect(ours.env).toEqual([
    { name: 'UPSTREAM_URL', value: 'http://unleash.unleash:4242' },
    { name: 'RUST_LOG', value: 'warn' },
    { name: 'LOG_FORMAT', value: 'json' },
  ]);
  expect(ours.envFrom).toEqual([{ secretRef: { name: SECRET_NAME } }]);
  expect(ours.livenessProbe.exec.command).toEqual(['/app/unleash-edge', 'health']);
  expect(ours.readinessProbe.exec.command).toEqual(['/app/unleash-edge', 'health']);
  // under this environment the program listens where the chart's port and probes look: 3063
  const env = containerEnv(ours, { [SECRET_NAME]: { TOKENS: CLIENT_TOKEN } });
  const config = parseConfig({ logger: silentLogger, edgeContract: true }, env);
  expect([config.port, config.contract, config.refreshInterval]).toEqual([
    ours.ports[0].containerPort,
    'edge',
    15_000,
  ]);
  expect(probeTarget(env, 'health')).toBe(
    `http://localhost:${ours.ports[0].containerPort}/internal-backstage/health`,
  );
});

test('run as the chart runs it: the probes pass before the first synchronisation (alive) and after (ready)', async () => {
  const upstreamPort = await freePort();
  const spec = renderContainer(moved(edgeUsersValues(`http://127.0.0.1:${upstreamPort}`)));
  const env = {
    ...containerEnv(spec, { [SECRET_NAME]: { TOKENS: CLIENT_TOKEN } }),
    PORT: String(await freePort()),
  };
  expect(Object.keys(env).sort()).toEqual([
    'LOG_FORMAT',
    'NODE_ENV',
    'PORT',
    'RUST_LOG',
    'TOKENS',
    'UPSTREAM_URL',
  ]);

  // ENTRYPOINT with the chart's args, as nobody (the image's USER node) when this process may switch
  const wrapper = nonRootWrapper();
  if (wrapper === undefined) console.warn('not root or no setpriv: the image’s program runs as this user');
  expect(image.stage.user).toBeDefined();
  expect(image.stage.user).not.toBe('root');
  const [node, bin, ...args] = image.command(spec.args);
  expect([node, args]).toEqual(['node', ['edge']]);
  proxy = await startBuiltProxy(env, { bin, args, cwd: image.app, wrapper });
  if (wrapper !== undefined) {
    const status = readFileSync(`/proc/${proxy.child.pid}/status`, 'utf8');
    expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe(String(NOBODY.uid));
  }
  const origin = proxy.origin;
  const readyCommand = { ...spec.readinessProbe, exec: { command: ['/app/unleash-edge', 'ready'] } };

  // before: the upstream is not there; alive, and the chart's readiness (health) passes; `ready` does not
  expect((await fetch(`${origin}/internal-backstage/ready`)).status).toBe(503);
  for (const probe of [spec.livenessProbe, spec.readinessProbe])
    expect(await execProbe(probe, env, wrapper)).toMatchObject({ code: 0, timedOut: false });
  const notReady = await execProbe(readyCommand, env, wrapper);
  expect(notReady).toMatchObject({ code: 1, timedOut: false });
  expect(notReady.output).toContain('"status":"NOT_READY"');

  // after the first synchronisation (Edge's 15 s poll interval: the next poll finds the upstream)
  await upstreamComesUpOn(upstreamPort);
  await waitFor(async () => (await fetch(`${origin}/internal-backstage/ready`)).status === 200, 45_000);
  for (const probe of [spec.livenessProbe, spec.readinessProbe, readyCommand])
    expect(await execProbe(probe, env, wrapper)).toMatchObject({ code: 0, timedOut: false });
  expect(upstream.featureRequests().length).toBeGreaterThan(0);

  // RUST_LOG=warn and LOG_FORMAT=json: one JSON object per line, nothing below warn but the lines that
  // tell an operator the process's story at the default level (docs/operations.md), no warning about them
  const story = /^flags-proxy listening on |^environment ".*" ready: \d+ flag definitions$/;
  const lines = proxy
    .output()
    .split('\n')
    .filter((l) => l.trim() !== '');
  for (const line of lines) {
    const parsed = JSON.parse(line) as { level?: unknown; msg?: unknown };
    const shown =
      typeof parsed.level === 'number' &&
      (parsed.level >= 40 ||
        (parsed.level === 30 && typeof parsed.msg === 'string' && story.test(parsed.msg)));
    expect([line, shown]).toEqual([line, true]);
  }
  expect(lines.some((line) => line.includes('flags-proxy listening on port'))).toBe(true);
  expect(proxy.output()).not.toMatch(/not supported here|RUST_LOG|LOG_FORMAT/);
  expect(proxy.output()).not.toContain('chart-client-token');
  expect(await proxy.stop()).toBe(0);
  proxy = undefined;
}, 120_000);

test('a probe that outlives timeoutSeconds fails, as the kubelet counts it', async () => {
  // an instance that accepts and never answers: the command gives up before the chart's 10 s
  const held: net.Socket[] = [];
  const silent = net.createServer((socket) => void held.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  try {
    const port = (silent.address() as AddressInfo).port;
    const result = await execProbe(
      EDGE_CHART_DEFAULTS.livenessProbe,
      { PORT: String(port) },
      nonRootWrapper(),
    );
    expect(result).toMatchObject({ code: 1, timedOut: false });
    expect(result.output).toContain('no answer within');
  } finally {
    for (const socket of held) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  }
}, 30_000);
