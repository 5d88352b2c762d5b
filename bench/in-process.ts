/**
 * A proxy in this process, ready, over the bench's generated definitions served by a loopback
 * upstream: what the in-process measurements (`engine-cost`, `new-user-steps`, `compression-cost`)
 * evaluate with. Nothing is polled again or reported while they measure.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { silentLogger } from '../src/common/logging/logger';
import { createApp, type ProxyApp } from '../src/proxy/app';
import { generateFeatures } from './flags';

export async function inProcessProxy(
  flags: number,
  name: string,
): Promise<{ readonly app: ProxyApp; close(): Promise<void> }> {
  const definitions = JSON.stringify(generateFeatures(flags));
  const upstream = http.createServer((req, res) => {
    if (req.url?.startsWith('/api/client/features'))
      res.writeHead(200, { 'content-type': 'application/json' }).end(definitions);
    else res.writeHead(202).end();
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const { port } = upstream.address() as AddressInfo;
  const app = createApp(
    {
      flagsUrl: `http://127.0.0.1:${port}/api`,
      flagsApiToken: `${name}-token`,
      clientKeys: [`${name}-key`],
      refreshInterval: 3_600_000,
      metricsInterval: 3_600_000,
      logger: silentLogger,
    },
    {},
  );
  await app.whenReady();
  return {
    app,
    close: async () => {
      await app.close();
      upstream.close();
    },
  };
}
