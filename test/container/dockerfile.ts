import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { cp, mkdir } from 'node:fs/promises';
import path from 'node:path';

/** One instruction of a Dockerfile, continuation lines joined. */
export interface Instruction {
  keyword: string;
  args: string;
}

/** What the runtime (last) stage of a Dockerfile does, in order, and how it starts. */
export interface RuntimeStage {
  workdir: string;
  env: Record<string, string>;
  user: string | undefined;
  expose: number[];
  /** The exec-form ENTRYPOINT: what runs, the container's arguments (or `cmd`) appended. */
  entrypoint: string[];
  /** The exec-form CMD: the default arguments (the whole command without an ENTRYPOINT). */
  cmd: string[];
  /** The shell-form command of HEALTHCHECK CMD (options such as `--interval` dropped). */
  healthcheck: string | undefined;
  steps: Array<
    | { kind: 'copy'; from: string | undefined; sources: string[]; dest: string; chmod: number | undefined }
    | { kind: 'run'; command: string }
  >;
}

export function instructions(dockerfile: string): Instruction[] {
  const joined = dockerfile.replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const space = l.search(/\s/);
      return { keyword: l.slice(0, space).toUpperCase(), args: l.slice(space + 1).trim() };
    });
}

/** The last `FROM`'s instructions, read as `docker build` reads them (the forms this Dockerfile uses). */
export function runtimeStage(dockerfile: string): RuntimeStage {
  const all = instructions(dockerfile);
  const from = all.map((i) => i.keyword).lastIndexOf('FROM');
  const stage: RuntimeStage = {
    workdir: '/',
    env: {},
    user: undefined,
    expose: [],
    entrypoint: [],
    cmd: [],
    healthcheck: undefined,
    steps: [],
  };
  for (const { keyword, args } of all.slice(from + 1)) {
    if (keyword === 'WORKDIR') stage.workdir = args;
    else if (keyword === 'ENV') {
      for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S+)/g))
        stage.env[m[1]] = m[2].replace(/^"|"$/g, '');
    } else if (keyword === 'USER') stage.user = args;
    else if (keyword === 'EXPOSE') stage.expose.push(...args.split(/\s+/).map((p) => Number.parseInt(p, 10)));
    else if (keyword === 'CMD') stage.cmd = execForm(keyword, args);
    else if (keyword === 'ENTRYPOINT') {
      stage.entrypoint = execForm(keyword, args);
      // Docker: an ENTRYPOINT resets the CMD of the stages before it
      stage.cmd = [];
    } else if (keyword === 'RUN') stage.steps.push({ kind: 'run', command: args });
    else if (keyword === 'HEALTHCHECK') stage.healthcheck = /^(?:--\S+\s+)*CMD\s+(.*)$/.exec(args)?.[1];
    else if (keyword === 'COPY') {
      const words = args.split(/\s+/);
      const flags = words.filter((w) => w.startsWith('--'));
      const paths = words.filter((w) => !w.startsWith('--'));
      const fromFlag = flags.find((f) => f.startsWith('--from='));
      const chmodFlag = flags.find((f) => f.startsWith('--chmod='));
      stage.steps.push({
        kind: 'copy',
        from: fromFlag?.slice('--from='.length),
        sources: paths.slice(0, -1),
        dest: paths[paths.length - 1],
        chmod: chmodFlag === undefined ? undefined : Number.parseInt(chmodFlag.slice('--chmod='.length), 8),
      });
    } else if (!['LABEL', 'ARG', 'STOPSIGNAL'].includes(keyword)) {
      throw new Error(`the runtime stage uses ${keyword}, which this test does not follow yet`);
    }
  }
  return stage;
}

/** An exec-form (JSON array) CMD or ENTRYPOINT; the shell form would run through `/bin/sh -c`, which this test does not follow. */
function execForm(keyword: string, args: string): string[] {
  const parsed: unknown = args.startsWith('[') ? JSON.parse(args) : undefined;
  if (!Array.isArray(parsed) || !parsed.every((a): a is string => typeof a === 'string'))
    throw new Error(`${keyword} must be in exec form (a JSON array of strings): ${args}`);
  return parsed;
}

/** The WORKDIR of a named build stage (where its `COPY --from=<name> /abs/path` sources live). */
export function stageWorkdir(dockerfile: string, name: string): string {
  let current: string | undefined;
  let workdir = '/';
  for (const { keyword, args } of instructions(dockerfile)) {
    if (keyword === 'FROM') {
      if (current === name) break;
      current = /\bAS\s+(\S+)$/i.exec(args)?.[1];
      workdir = '/';
    } else if (keyword === 'WORKDIR') workdir = args;
  }
  return workdir;
}

/** `.dockerignore` patterns, as a filter of paths relative to the build context. */
export function dockerignore(root: string): (relative: string) => boolean {
  const file = path.join(root, '.dockerignore');
  const patterns = existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '' && !l.startsWith('#'))
    : [];
  const regexes = patterns.map(
    (p) =>
      new RegExp(
        `^${p
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*/g, '[^/]*')
          .replace(/\?/g, '[^/]')}(/.*)?$`,
      ),
  );
  return (relative) => !regexes.some((r) => r.test(relative));
}

/**
 * Copies like `COPY <sources> <dest>`: a directory's contents into `dest`, a file into `dest`
 * (or `dest/<name>` when `dest` ends with `/` or several sources are given).
 */
export async function copyLikeDocker(
  sources: readonly string[],
  dest: string,
  filter: (source: string) => boolean,
): Promise<void> {
  for (const source of sources) {
    if (!existsSync(source)) throw new Error(`COPY source ${source} does not exist`);
    if (statSync(source).isDirectory()) {
      await mkdir(dest, { recursive: true });
      await cp(source, dest, { recursive: true, filter: (src) => filter(src) });
    } else {
      const target = dest.endsWith('/') || sources.length > 1 ? path.join(dest, path.basename(source)) : dest;
      await mkdir(path.dirname(target), { recursive: true });
      await cp(source, target);
    }
  }
}

/** Runs a shell command (a `RUN` line); resolves with its output, rejects with it on failure. */
export function runShell(
  command: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      '/bin/sh',
      ['-c', command],
      { cwd, env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const output = `${stdout}${stderr}`;
        if (err) reject(new Error(`RUN ${command} failed: ${err.message}\n${output}`));
        else resolve(output);
      },
    );
  });
}
