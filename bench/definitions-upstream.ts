import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateFeatures } from './flags';

/**
 * A loopback upstream serving the bench's generated definitions of `flags` toggles at
 * `/api/client/features` (and 202 to anything else, as metrics and registration), for a proxy
 * started with `FLAGS_URL=http://127.0.0.1:<port>/api`.
 */
export async function definitionsUpstream(flags: number): Promise<{ readonly port: number; close(): void }> {
  const definitions = JSON.stringify(generateFeatures(flags));
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.startsWith('/api/client/features'))
        res.writeHead(200, { 'content-type': 'application/json' }).end(definitions);
      else res.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, close: () => server.close() };
}
