import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import http, { type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Serves an app on a free loopback port; the caller closes the server. */
export async function listenOnLoopback(app: RequestListener): Promise<{ server: Server; url: string }> {
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/**
 * Loopback servers a test file opens and closes after each test: `listen(app)` serves an app and
 * gives its URL; `closeAll()` cuts their connections (keep-alive included) and closes them.
 */
export class LoopbackServers {
  private readonly servers: Server[] = [];

  async listen(app: RequestListener): Promise<string> {
    return (await this.open(app)).url;
  }

  /** The same, with the server itself (to watch its connections, say). */
  async open(app: RequestListener): Promise<{ server: Server; url: string }> {
    const opened = await listenOnLoopback(app);
    this.servers.push(opened.server);
    return opened;
  }

  async closeAll(): Promise<void> {
    await Promise.all(
      this.servers.splice(0).map((s) => {
        s.closeAllConnections();
        return new Promise((resolve) => s.close(resolve));
      }),
    );
  }
}

/**
 * A port no socket holds now, chosen by the kernel, for a child process that binds it by number.
 * A port picked at random can be one of the kernel's ephemeral ports (32768–60999 here) held by
 * another test's outgoing connection; binding 0 and closing leaves only the short window before
 * the child binds.
 */
export async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The TCP ports process `pid` listens on now (Linux: its socket descriptors matched with the
 * listening sockets of /proc/net/tcp and tcp6). Reading a child's port this way, after it bound
 * PORT=0, leaves no window in which another test's server can take the port first.
 */
export function listeningPortsOf(pid: number): number[] {
  const inodes = new Set<string>();
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return []; // gone
  }
  for (const fd of fds) {
    try {
      const socket = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (socket) inodes.add(socket[1]);
    } catch {
      // closed since the listing
    }
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const columns = line.trim().split(/\s+/);
      const [, local, , state, , , , , , inode] = columns;
      // state 0A: LISTEN
      if (columns.length >= 10 && state === '0A' && inodes.has(inode)) {
        ports.add(parseInt(local.split(':')[1], 16));
      }
    }
  }
  return [...ports];
}

/**
 * Waits until child process `child` listens on exactly one TCP port and gives it (started with
 * PORT=0); fails when the process exits first, with `output()` in the message.
 */
export async function childPort(
  child: ChildProcess,
  output: () => string = () => '',
  timeoutMs = 20_000,
): Promise<number> {
  const pid = child.pid;
  if (pid === undefined) throw new Error(`the process did not start:\n${output()}`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`the process exited (${String(child.exitCode ?? child.signalCode)}):\n${output()}`);
    const ports = listeningPortsOf(pid);
    if (ports.length === 1) return ports[0];
    if (ports.length > 1) throw new Error(`the process listens on ${ports.join(', ')}: give it PORT`);
    if (Date.now() > deadline) throw new Error(`the process did not listen in ${timeoutMs} ms:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
