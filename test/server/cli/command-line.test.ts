import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { listeningPortsOf } from '../../support/listen';
import { waitFor } from '../../support/proxy';

/** The built program, as `npm run server` and the container run it (`npm run build` first). */
const BIN = path.resolve(__dirname, '../../../dist/src/bin/flags-server.js');
const VERSION = (
  JSON.parse(readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as {
    version: string;
  }
).version;
const ADMIN_TOKEN = 'cli-admin-secret-31c7';
const CLIENT_TOKEN = 'cli-client-secret-8e02';

function run(args: string[], env: Record<string, string> = {}) {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run npm run build`);
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH ?? '', FLAGS_SERVER_DATA_DIR: 'memory', ...env },
    stdio: 'pipe',
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, exited, output: () => stdout + stderr };
}

describe('the flags-server program', () => {
  it('--help prints what it reads and exits 0 without serving', async () => {
    const { code, stdout, stderr } = await run(['--help'], { FLAGS_SERVER_PORT: '0' }).exited;
    expect(code).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toContain(`flags-server ${VERSION}`);
    expect(stdout).toContain('Usage: flags-server');
    for (const variable of ['FLAGS_SERVER_PORT', 'DATABASE_URL', 'FLAGS_SERVER_ADMIN_TOKENS', 'LOG_LEVEL'])
      expect(stdout).toContain(variable);
    expect(stdout).not.toContain('listening');
  });

  it('--version prints the package version and exits 0', async () => {
    const { code, stdout } = await run(['--version']).exited;
    expect(code).toBe(0);
    expect(stdout).toBe(`flags-server ${VERSION}\n`);
  });

  it('an unknown argument is refused with exit code 2, pointing at --help', async () => {
    const { code, stdout, stderr } = await run(['--port=1']).exited;
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'flags-server: unknown argument "--port=1": flags-server is configured by environment variables (see flags-server --help)\n',
    );
  });

  it('its start-up line names the address and port it holds, never a token, and it says when it stopped', async () => {
    const program = run([], {
      FLAGS_SERVER_PORT: '0',
      FLAGS_SERVER_ADMIN_TOKENS: ADMIN_TOKEN,
      FLAGS_SERVER_CLIENT_TOKENS: CLIENT_TOKEN,
    });
    try {
      await waitFor(() => program.output().includes('listening on'), 30_000);
      const line =
        program
          .output()
          .split('\n')
          .find((l) => l.includes('listening on')) ?? '';
      const match =
        /flags-server listening on port (\d+) on every interface \(::\) \(http:\/\/127\.0\.0\.1:(\d+) from this host\)/.exec(
          line,
        );
      expect(match).not.toBeNull();
      const port = Number(match?.[1]);
      expect(match?.[2]).toBe(String(port));
      // the port named is the one the process holds, and it answers there
      expect(listeningPortsOf(program.child.pid ?? 0)).toEqual([port]);
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      expect(health.status).toBe(200);
      program.child.kill('SIGTERM');
      const { code } = await program.exited;
      expect(code).toBe(0);
      expect(program.output()).toContain('flags-server stopped');
      expect(program.output()).not.toContain(ADMIN_TOKEN);
      expect(program.output()).not.toContain(CLIENT_TOKEN);
    } finally {
      program.child.kill('SIGKILL');
      await program.exited;
    }
  }, 60_000);
});
