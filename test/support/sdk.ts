import type { EventEmitter } from 'node:events';
import type { Unleash } from 'unleash-client';

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
