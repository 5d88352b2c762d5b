/**
 * The proxy against a real flags-server, both on loopback sockets: the example flags served and
 * evaluated, a features-file edit reaching the proxy within one refresh, and a wrong upstream token.
 */
import { readFile, writeFile } from 'node:fs/promises';
import type { RunningFlagServer } from '../../src/server';
import { waitFor } from '../support/proxy';
import {
  ADMIN_TOKEN,
  CLIENT_KEY,
  REFRESH_INTERVAL,
  WATCH_INTERVAL,
  capturingLogger,
  copyOfExampleFeatures,
  getToggles,
  listenProxy,
  startTestFlagServer,
  type ListeningProxy,
} from './stack';

interface FeaturesFile {
  version: number;
  features: Array<{ name: string; enabled: boolean } & Record<string, unknown>>;
  segments?: unknown[];
}

let features: Awaited<ReturnType<typeof copyOfExampleFeatures>>;
let flagServer: RunningFlagServer;
let proxy: ListeningProxy;
const serverLog = capturingLogger();

beforeAll(async () => {
  features = await copyOfExampleFeatures();
  flagServer = await startTestFlagServer(features.file, { logger: serverLog });
  proxy = await listenProxy(flagServer);
});

afterAll(async () => {
  await proxy?.close();
  await flagServer?.close();
  await features?.remove();
});

describe('proxy with flags-server', () => {
  it('becomes ready and serves the example flags evaluated for the context', async () => {
    await waitFor(async () => (await fetch(`${proxy.origin}/proxy/health`)).status === 200, 10_000);

    const alice = await getToggles(`${proxy.origin}/proxy?userId=alice`);
    expect(alice.status).toBe(200);
    // Only enabled toggles, never a definition, sorted by name.
    expect([...alice.toggles.keys()]).toEqual([
      'beta-dashboard',
      'new-checkout',
      'office-debug-panel',
      'search-v2',
      'spring-sale-banner',
    ]);
    expect(alice.toggles.get('new-checkout')).toEqual({
      name: 'new-checkout',
      enabled: true,
      impressionData: false,
      variant: { name: 'disabled', enabled: false },
    });
    // flexibleRollout 50% sticky on userId: alice is in, with the json-payload variant.
    expect(alice.toggles.get('search-v2')).toEqual({
      name: 'search-v2',
      enabled: true,
      impressionData: true,
      variant: {
        name: 'ranking-b',
        enabled: true,
        payload: { type: 'json', value: '{"boost":"recency","maxResults":25}' },
      },
    });
    expect(alice.toggles.get('spring-sale-banner')?.variant).toEqual({
      name: 'banner-text',
      enabled: true,
      payload: { type: 'string', value: 'Spring sale: 20% off everything!' },
    });

    // userWithId: dave is not a beta tester; constraints on properties and segments.
    const dave = await getToggles(
      `${proxy.origin}/proxy?userId=dave&appVersion=2.4.0&platform=ios&country=DE&basketValue=150&plan=premium`,
    );
    expect(dave.toggles.has('beta-dashboard')).toBe(false);
    expect(dave.toggles.has('mobile-dark-mode')).toBe(true);
    expect(dave.toggles.has('eu-cookie-banner-v2')).toBe(true);
    expect(dave.toggles.has('premium-support-chat')).toBe(true);
    const older = await getToggles(`${proxy.origin}/proxy?userId=dave&appVersion=2.3.0&platform=ios`);
    expect(older.toggles.has('mobile-dark-mode')).toBe(false);

    // A disabled flag asked for by name comes back disabled.
    const res = await fetch(`${proxy.origin}/proxy`, {
      method: 'POST',
      headers: { Authorization: CLIENT_KEY, 'Content-Type': 'application/json' },
      body: JSON.stringify({ context: { userId: 'alice' }, toggles: ['legacy-export', 'beta-dashboard'] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { toggles: Array<{ name: string; enabled: boolean }> };
    expect(body.toggles.map((t) => [t.name, t.enabled])).toEqual([
      ['legacy-export', false],
      ['beta-dashboard', true],
    ]);
  });

  it('serves a change to the features file within one refresh (plus the watch interval)', async () => {
    await proxy.app.whenReady();
    const before = await getToggles(`${proxy.origin}/proxy?userId=alice`);
    expect(before.toggles.get('new-checkout')?.enabled).toBe(true);
    expect(before.toggles.has('legacy-export')).toBe(false);

    const definitions = JSON.parse(await readFile(features.file, 'utf8')) as FeaturesFile;
    for (const feature of definitions.features) {
      if (feature.name === 'new-checkout') feature.enabled = false;
      if (feature.name === 'legacy-export') feature.enabled = true;
    }
    const editedAt = Date.now();
    await writeFile(features.file, JSON.stringify(definitions, null, 2));

    // One watch interval for the server to see the file, one refresh for the proxy to poll it,
    // and slack for a loaded CI machine.
    const bound = WATCH_INTERVAL + REFRESH_INTERVAL + 1500;
    let after = before;
    await waitFor(async () => {
      after = await getToggles(`${proxy.origin}/proxy?userId=alice`);
      return !after.toggles.has('new-checkout');
    }, bound);
    const elapsed = Date.now() - editedAt;
    expect(elapsed).toBeLessThan(bound);
    expect(after.toggles.get('legacy-export')?.enabled).toBe(true);
    expect(after.etag).not.toBe(before.etag);

    // A broken edit is rejected by the server; the proxy keeps serving the last good definitions.
    await writeFile(features.file, '{"version": 2, "features": [');
    await waitFor(() =>
      serverLog.lines.some((l) => l.level === 'error' && /keeping the last good definitions/.test(l.msg)),
    );
    const revision = flagServer.flagServer.features.current().revision;
    const still = await getToggles(`${proxy.origin}/proxy?userId=alice`);
    expect(still.status).toBe(200);
    expect(still.etag).toBe(after.etag);
    expect(still.toggles.has('new-checkout')).toBe(false);
    expect(flagServer.flagServer.features.current().revision).toBe(revision);
  });

  it('stays not ready (503) when given an admin token for the client API', async () => {
    const logger = capturingLogger();
    const wrong = await listenProxy(flagServer, { flagsApiToken: ADMIN_TOKEN, logger });
    try {
      // The upstream answered and the proxy reported the rejected token...
      await waitFor(() =>
        logger.lines.some((l) => l.level === 'error' && /rejected the API token/.test(l.msg)),
      );
      // ...and is not ready: health and evaluation answer 503 with the error body.
      const health = await fetch(`${wrong.origin}/proxy/health`);
      expect(health.status).toBe(503);
      await health.arrayBuffer();
      const res = await fetch(`${wrong.origin}/proxy?userId=alice`, {
        headers: { Authorization: CLIENT_KEY },
      });
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ name: 'NotReady' });
      // The good proxy on the same server is unaffected.
      expect((await getToggles(`${proxy.origin}/proxy?userId=alice`)).status).toBe(200);
    } finally {
      await wrong.close();
    }
  });
});
