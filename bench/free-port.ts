import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A loopback port free a moment ago, for a child process to listen on. */
export async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
