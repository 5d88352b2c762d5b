import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { listeningPortsOf } from './listen';
import { waitFor } from './proxy';

/** The built program, as `npm start` and the container run it (`npm run build` first). */
export const BUILT_PROXY = path.resolve(__dirname, '../../dist/src/bin/flags-proxy.js');

export interface BuiltProxy {
  child: ChildProcess;
  port: number;
  /** e.g. http://127.0.0.1:38123 */
  origin: string;
  /** Everything the process wrote so far, stdout and stderr together. */
  output(): string;
  /** SIGTERM, then waits for the exit (SIGKILL after 10 s). */
  stop(): Promise<number | null>;
}

export interface BuiltProxyOptions {
  /** The program's path (default: this worktree's build). */
  bin?: string;
  /** The program's arguments (default none). */
  args?: readonly string[];
  cwd?: string;
  /** Runs `node` through this command and its arguments (e.g. `setpriv` to drop to another user). */
  wrapper?: readonly string[];
  /** The path answering 200 once the process serves (default `/internal-backstage/health`). */
  livenessPath?: string;
  /** How long the process may take to serve (default 20 s). */
  startTimeoutMs?: number;
}

/**
 * Starts the built proxy with exactly `env` (plus `PATH`, and `PORT` unless given: 0, the port the
 * kernel chooses, read from the process's listening socket), and resolves once the process holds
 * its port and `livenessPath` answers 200 there. A port chosen beforehand and released (a "free"
 * port) could be taken by another test's server before the child binds it, and that server's
 * answers read as the proxy's; this never asks a port the child does not hold.
 */
export async function startBuiltProxy(
  env: Record<string, string>,
  options: BuiltProxyOptions = {},
): Promise<BuiltProxy> {
  const bin = options.bin ?? BUILT_PROXY;
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run npm run build (npm test does it first)`);
  const given = env.PORT !== undefined ? Number(env.PORT) : undefined;
  const command = [...(options.wrapper ?? []), process.execPath, bin, ...(options.args ?? [])];
  const child = spawn(command[0], command.slice(1), {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? '', PORT: '0', ...env },
    stdio: 'pipe',
  });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let exitCode: number | null | undefined;
  void exited.then((code) => (exitCode = code));
  let port = 0;
  try {
    await waitFor(async () => {
      if (exitCode !== undefined) throw new Error(`the proxy exited with ${String(exitCode)}:\n${output}`);
      const held = child.pid === undefined ? [] : listeningPortsOf(child.pid);
      if (given !== undefined) port = held.includes(given) ? given : 0;
      else port = held.length === 1 ? held[0] : 0;
      if (port === 0) return false;
      try {
        return (
          (await fetch(`http://127.0.0.1:${port}${options.livenessPath ?? '/internal-backstage/health'}`))
            .status === 200
        );
      } catch {
        return false;
      }
    }, options.startTimeoutMs ?? 20_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n--- proxy output ---\n${output}`);
  }
  return {
    child,
    port,
    origin: `http://127.0.0.1:${port}`,
    output: () => output,
    stop: async () => {
      if (exitCode === undefined) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}
