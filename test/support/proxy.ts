import { createApp, type ProxyApp } from '../../src/proxy/app';
import type { ProxyOptions } from '../../src/proxy/config/types';
import { silentLogger } from '../../src/common/logging/logger';
import type { TestUpstream } from './upstream';

export const CLIENT_KEY = 'client-key-1';

/** A proxy wired to the test upstream, isolated from the process environment. */
export function proxyFor(upstream: TestUpstream, options: ProxyOptions = {}): ProxyApp {
  return createApp(
    {
      flagsUrl: upstream.url,
      flagsApiToken: upstream.token,
      clientKeys: [CLIENT_KEY],
      refreshInterval: 200,
      metricsInterval: 60_000,
      // tests read their own requests back at once; the scrape cache has its own tests
      prometheusCacheInterval: 0,
      logger: silentLogger,
      ...options,
    },
    {},
  );
}

/** Same, every environment already synchronised. */
export async function readyProxyFor(upstream: TestUpstream, options: ProxyOptions = {}): Promise<ProxyApp> {
  const app = proxyFor(upstream, options);
  await everyEnvironmentReady(app);
  return app;
}

/** `whenReady()` resolves once any environment is ready; this waits for every one of them. */
export async function everyEnvironmentReady(app: ProxyApp): Promise<void> {
  await Promise.all(app.environments.environments.map((e) => e.features.whenReady()));
}

export async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The URLs of the requests that reach the app's Express router from now on: through `app.listener`
 * the front answers its endpoints without it, so a test can tell who answered.
 */
export function expressRouted(app: ProxyApp): string[] {
  const routed: string[] = [];
  const router = app.router as unknown as { handle: (...args: unknown[]) => unknown };
  const handle = router.handle.bind(router);
  router.handle = (...args: unknown[]) => {
    routed.push(String((args[0] as { url?: string }).url));
    return handle(...args);
  };
  return routed;
}
