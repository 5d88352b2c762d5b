/**
 * The image, where no Docker engine runs: a folder holding only what the Dockerfile's runtime stage
 * copies, its `RUN` executed as written (`npm ci --omit=dev --ignore-scripts` against the npm
 * registry), and its ENTRYPOINT (and CMD, or the container's arguments) run from it, as a non-root
 * user when this process may switch to one.
 */
import { spawnSync } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { copyLikeDocker, dockerignore, runShell, stageWorkdir, type RuntimeStage } from './dockerfile';

export const NOBODY = { uid: 65534, gid: 65534 };

/** Drops to `nobody` with `setpriv` when this process may (root); undefined otherwise. */
export function nonRootWrapper(): string[] | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const probe = spawnSync('setpriv', ['--version']);
  if (probe.status !== 0) return undefined;
  return ['setpriv', `--reuid=${NOBODY.uid}`, `--regid=${NOBODY.gid}`, '--clear-groups', '--'];
}

/** What npm prints when the registry cannot be reached (not a lockfile or package problem). */
const OFFLINE = /ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNREFUSED|ECONNRESET|ENETUNREACH/;

/**
 * Without the registry: the packages `npm ls --omit=dev` lists in this worktree's node_modules,
 * copied to the same places under `app` (what `npm ci --omit=dev` would install from the lockfile).
 */
async function copyProductionDependencies(root: string, app: string): Promise<void> {
  const listed = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], {
    cwd: root,
    encoding: 'utf8',
  });
  const modules = realpathSync(path.join(root, 'node_modules'));
  const packages = listed.stdout
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && realpathSync(line).startsWith(`${modules}${path.sep}`));
  for (const dir of packages) {
    const relative = path.relative(modules, realpathSync(dir));
    await cp(dir, path.join(app, 'node_modules', relative), {
      recursive: true,
      // nested node_modules are listed (and copied) on their own
      filter: (src) => !path.relative(dir, src).split(path.sep).includes('node_modules'),
    });
  }
}

/** The staged image: `app` is the stage's WORKDIR inside `folder` (the image's root). */
export interface ImageFolder {
  folder: string;
  app: string;
  stage: RuntimeStage;
  /** An absolute path of the image (`/app/unleash-edge`) as a path of the folder; others unchanged. */
  inImage(file: string): string;
  /** What the container runs given these arguments (Kubernetes' `args`): ENTRYPOINT + (args or CMD). */
  command(args?: readonly string[]): string[];
}

/** The runtime stage's COPY and RUN steps, as `docker build` runs them, in a new folder. */
export async function stageImage(
  root: string,
  dockerfile: string,
  stage: RuntimeStage,
): Promise<ImageFolder> {
  const folder = await mkdtemp(path.join(os.tmpdir(), 'flags-proxy-image-'));
  await chmod(folder, 0o755);
  const app = path.join(folder, stage.workdir.replace(/^\/+/, ''));
  await mkdir(app, { recursive: true, mode: 0o755 });
  const keep = dockerignore(root);
  for (const step of stage.steps) {
    if (step.kind === 'run') {
      // a private npm cache: `npm cache clean --force` of the RUN line must not touch anyone else's
      const runEnv = {
        PATH: process.env.PATH ?? '',
        HOME: folder,
        npm_config_cache: path.join(folder, '.npm-cache'),
        ...stage.env,
      };
      try {
        await runShell(step.command, app, runEnv, 240_000);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (!/\bnpm ci\b/.test(step.command) || !OFFLINE.test(message)) throw err;
        console.warn(
          `the npm registry is unreachable: production dependencies copied from this worktree instead\n${message}`,
        );
        await copyProductionDependencies(root, app);
      }
      continue;
    }
    const dest = path.resolve(app, step.dest);
    const target = step.dest.endsWith('/') ? `${dest}/` : dest;
    if (step.from !== undefined) {
      // the build stage compiled this worktree: its WORKDIR is this worktree, whose dist/ `npm run build` made
      const workdir = stageWorkdir(dockerfile, step.from);
      const sources = step.sources.map((s) => path.join(root, path.relative(workdir, s)));
      await copyLikeDocker(sources, target, () => true);
    } else {
      const sources = step.sources.map((s) => path.join(root, s));
      await copyLikeDocker(sources, target, (src) => keep(path.relative(root, src)));
    }
    if (step.chmod !== undefined) {
      const copied =
        step.sources.length === 1 && !step.dest.endsWith('/')
          ? [dest]
          : step.sources.map((s) => path.join(dest, path.basename(s)));
      for (const file of copied) await chmod(file, step.chmod);
    }
  }
  const workdir = stage.workdir.replace(/\/+$/, '');
  const inImage = (file: string) =>
    file.startsWith(`${workdir}/`) ? path.join(app, file.slice(workdir.length + 1)) : file;
  return {
    folder,
    app,
    stage,
    inImage,
    command: (args) => [...stage.entrypoint, ...(args ?? stage.cmd)].map(inImage),
  };
}
