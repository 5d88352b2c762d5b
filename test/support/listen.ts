import http, { type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Serves an app on a free loopback port; the caller closes the server. */
export async function listenOnLoopback(app: RequestListener): Promise<{ server: Server; url: string }> {
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}
