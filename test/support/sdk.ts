import type { EventEmitter } from 'node:events';
import { InMemStorageProvider, Unleash } from 'unleash-client';

/**
 * Destroys a server-side SDK instance a test started. `unleash-client` drops every listener of its
 * repository on stop, yet a fetch still in flight emits its failure there afterwards (the server it
 * polled closes right after): without a listener that is an unhandled 'error' thrown into whatever
 * test file runs next in the worker. The proxy's own repository does the same (upstream/sdk/guarded-repository.ts).
 */
export function destroySdk(client: Unleash): void {
  client.destroy();
  const repository = (client as unknown as { repository?: EventEmitter }).repository;
  repository?.on('error', () => undefined);
}

/** A toggle's usage counts as the client API reports them (`bucket.toggles[name]`). */
export interface UsageCounts {
  yes: number;
  no: number;
  variants: Record<string, number>;
}

/**
 * A plain `unleash-client` reading `url` with `token`, synchronised once: the reference the
 * differential tests compare the proxy with (no metrics, no polling during a scenario, no disk).
 */
export async function plainClient(url: string, token: string, appName: string): Promise<Unleash> {
  const plain = new Unleash({
    url,
    appName,
    environment: 'default',
    customHeaders: { Authorization: token },
    disableMetrics: true,
    refreshInterval: 60_000,
    skipInstanceCountWarning: true,
    storageProvider: new InMemStorageProvider(),
  });
  await new Promise<void>((resolve) => plain.once('synchronized', () => resolve()));
  return plain;
}
