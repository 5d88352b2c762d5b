/**
 * The container path, checked where no Docker engine runs: a folder holding only what the
 * Dockerfile's runtime stage copies, its `RUN` executed as written (`npm ci --omit=dev
 * --ignore-scripts` against the npm registry), its ENTRYPOINT started as a non-root user (`nobody`,
 * standing in for the image's `USER node`) with the environment of `examples/kubernetes/` (Edge's
 * Helm names: `UPSTREAM_URL`, `TOKENS`, `PORT`), and the probes, scrape and a frontend request of
 * that manifest called. A file the program needs that the Dockerfile does not copy makes it fail.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { EXAMPLE_FEATURES_FILE, type RunningFlagServer } from '../../src/server';
import { startBuiltProxy, type BuiltProxy } from '../support/built-proxy';
import { freePort } from '../support/listen';
import { waitFor } from '../support/proxy';
import { startTestFlagServer } from '../e2e/stack';
import { runtimeStage } from './dockerfile';
import { NOBODY, nonRootWrapper, stageImage, type ImageFolder } from './image-folder';
import { readKubernetesExample } from './kubernetes-example';

const ROOT = path.resolve(__dirname, '../..');
const DOCKERFILE = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
const CLIENT_TOKEN = '*:production.container-client-token-0123456789';
const FRONTEND = '*:production.container-frontend-token-0123456789';

let image: ImageFolder;
let app: string;
let flagServer: RunningFlagServer;
let proxy: BuiltProxy | undefined;

beforeAll(async () => {
  if (!existsSync(path.join(ROOT, 'dist/src/bin/flags-proxy.js')))
    throw new Error('dist/ is missing: run npm run build first (the build stage of the Dockerfile)');
  // The flags-server starts (PGlite, seconds of CPU) while the image folder is staged (mostly the
  // wait for the npm registry); set before afterAll runs, whatever the staging does.
  const serverStarting = startTestFlagServer(EXAMPLE_FEATURES_FILE, {
    featuresWatchInterval: 0,
    clientTokens: [CLIENT_TOKEN],
    frontendTokens: [FRONTEND],
  }).then((server) => (flagServer = server));
  try {
    image = await stageImage(ROOT, DOCKERFILE, runtimeStage(DOCKERFILE));
    app = image.app;
  } finally {
    await serverStarting;
  }
}, 300_000);

afterAll(async () => {
  await proxy?.stop();
  await flagServer?.close();
  if (image) await rm(image.folder, { recursive: true, force: true });
});

test('the runtime stage holds only what it copies: no sources, no dev dependencies, no test files', () => {
  expect(existsSync(path.join(app, 'dist/src/bin/flags-proxy.js'))).toBe(true);
  expect(existsSync(path.join(app, 'node_modules/express'))).toBe(true);
  for (const absent of [
    'src/proxy/app.ts',
    'test',
    'node_modules/typescript',
    'node_modules/jest',
    'dist/test',
  ])
    expect([absent, existsSync(path.join(app, absent))]).toEqual([absent, false]);
  // of src/, only what runs as it is: the migrations and the status page's files, never TypeScript
  const sources = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? sources(path.join(dir, e.name)) : [path.join(dir, e.name)],
    );
  expect(sources(path.join(app, 'src')).filter((f) => f.endsWith('.ts'))).toEqual([]);
  expect(existsSync(path.join(app, 'src/proxy/status/page/index.html'))).toBe(true);
});

test('started as a non-root user with the Kubernetes example’s environment, the image passes its probes, a keyless scrape and a frontend request', async () => {
  const stage = runtimeStage(DOCKERFILE);
  const k8s = readKubernetesExample();
  expect(stage.user).toBeDefined();
  expect(stage.user).not.toBe('root');
  expect(k8s.runAsNonRoot).toBe(true);
  // the manifest is consistent: probes, Service and scrape all reach the port the process listens on
  const portEnv = k8s.env.find((e) => e.name === 'PORT');
  expect(portEnv && 'value' in portEnv ? Number(portEnv.value) : undefined).toBe(k8s.containerPort);
  expect(k8s.liveness.port).toBe(k8s.containerPort);
  expect(k8s.readiness.port).toBe(k8s.containerPort);
  expect(k8s.service.targetPort).toBe(k8s.containerPort);
  expect(k8s.scrape?.port).toBe(k8s.containerPort);

  // `-p <free port>:<containerPort>`: the only change to the manifest's environment, besides
  // pointing UPSTREAM_URL at the test's flags-server and filling the Secret
  const port = await freePort();
  const secrets: Record<string, string> = { 'flags-proxy-tokens/TOKENS': CLIENT_TOKEN };
  const env: Record<string, string> = { ...stage.env };
  for (const entry of k8s.env) {
    if ('secret' in entry) env[entry.name] = secrets[`${entry.secret.name}/${entry.secret.key}`];
    else env[entry.name] = entry.value;
  }
  env.UPSTREAM_URL = flagServer.url;
  env.PORT = String(port);
  expect(Object.keys(env).sort()).toEqual(['NODE_ENV', 'PORT', 'TOKENS', 'UPSTREAM_URL']);

  // no arguments: the ENTRYPOINT alone (the manifest gives none), configured by the environment
  const [command, bin, ...args] = image.command();
  expect([command, args]).toEqual(['node', []]);
  const wrapper = nonRootWrapper();
  if (wrapper === undefined) console.warn('not root or no setpriv: the image’s program runs as this user');
  proxy = await startBuiltProxy(env, {
    bin,
    cwd: app,
    wrapper,
    livenessPath: k8s.liveness.path,
  });
  const origin = proxy.origin;
  if (wrapper !== undefined) {
    const status = readFileSync(`/proc/${proxy.child.pid}/status`, 'utf8');
    expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe(String(NOBODY.uid));
  }
  await waitFor(async () => (await fetch(`${origin}${k8s.readiness.path}`)).status === 200, 20_000);
  expect(await (await fetch(`${origin}${k8s.liveness.path}`)).json()).toEqual({ status: 'OK' });
  expect(await (await fetch(`${origin}${k8s.readiness.path}`)).json()).toEqual({ status: 'READY' });
  const scrape = await fetch(`${origin}${k8s.scrape?.path ?? ''}`);
  expect(scrape.status).toBe(200);
  expect(await scrape.text()).toContain('flags_proxy_up 1');
  const answer = await fetch(`${origin}/api/frontend?userId=alice`, { headers: { Authorization: FRONTEND } });
  expect(answer.status).toBe(200);
  const names = ((await answer.json()) as { toggles: Array<{ name: string }> }).toggles.map((t) => t.name);
  expect(names).toContain('beta-dashboard');
  expect(
    (await fetch(`${origin}/api/frontend`, { headers: { Authorization: '*:production.made-up-0000' } }))
      .status,
  ).toBe(401);
  expect(proxy.output()).not.toContain('container-client-token');

  // the image's own HEALTHCHECK, run as Docker runs it (`/bin/sh -c`) in the container's environment,
  // finds the port and path Edge's names chose; the image exposes that port
  expect(stage.expose).toContain(k8s.containerPort);
  expect(stage.healthcheck).toBeDefined();
  const healthy = await shell(stage.healthcheck ?? 'false', env);
  expect(healthy).toBe(0);
  expect(await shell(stage.healthcheck ?? 'false', { ...env, PORT: String(await freePort()) })).not.toBe(0);
}, 60_000);

/** Runs a shell command with only `env` (and PATH); its exit code. */
function shell(command: string, env: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: 'ignore',
    });
    child.once('exit', (code) => resolve(code ?? 1));
  });
}
