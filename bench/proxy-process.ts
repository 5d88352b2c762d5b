import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

/**
 * The built proxy of the worktree `root` (`dist/src/bin/flags-proxy.js`) as its own process, one
 * worker, configured by environment variables as `npm start` is: the bench's upstream on loopback,
 * one client key, errors only in its log, no poll or usage report while it is measured.
 */
export function spawnProxy(
  root: string,
  upstreamPort: number,
  port: number,
  clientKey: string,
  /** Node options before the program (`--require` a bench module) and variables it reads. */
  extra: { readonly nodeArgs?: readonly string[]; readonly env?: Readonly<Record<string, string>> } = {},
): ChildProcess {
  return spawn(
    process.execPath,
    [...(extra.nodeArgs ?? []), path.join(root, 'dist/src/bin/flags-proxy.js')],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: {
        PATH: process.env.PATH,
        FLAGS_URL: `http://127.0.0.1:${upstreamPort}/api`,
        FLAGS_API_TOKEN: 'bench-proxy-upstream-token',
        FLAGS_PROXY_CLIENT_KEYS: clientKey,
        FLAGS_FETCH_INTERVAL: '100000',
        FLAGS_METRICS_INTERVAL: '100000',
        LOG_LEVEL: 'error',
        PORT: String(port),
        NODE_ENV: 'production',
        FLAGS_WORKERS: '1',
        ...extra.env,
      },
    },
  );
}
