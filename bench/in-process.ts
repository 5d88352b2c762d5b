/**
 * A proxy in this process, ready, over the bench's generated definitions served by a loopback
 * upstream: what the in-process measurements (`engine-cost`, `new-user-steps`, `compression-cost`)
 * evaluate with. Nothing is polled again or reported while they measure.
 */
import { silentLogger } from '../src/common/logging/logger';
import { createApp, type ProxyApp } from '../src/proxy/app';
import { definitionsUpstream } from './definitions-upstream';

export async function inProcessProxy(
  flags: number,
  name: string,
): Promise<{ readonly app: ProxyApp; close(): Promise<void> }> {
  const upstream = await definitionsUpstream(flags);
  const app = createApp(
    {
      flagsUrl: `http://127.0.0.1:${upstream.port}/api`,
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
