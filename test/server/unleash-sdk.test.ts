import { once } from 'node:events';
import { Unleash } from 'unleash-client';
import { silentLogger } from '../../src/common/logging/logger';
import { startFlagServer, type RunningFlagServer } from '../../src/server';
import { CLIENT_TOKEN, TOKENS } from './helpers/backends';
import { waitFor } from './helpers/wait';
import { destroySdk } from '../support/sdk';
import { freshPgliteDir } from '../support/pglite';

describe('a real unleash-client against flags-server', () => {
  let running: RunningFlagServer;
  let unleash: Unleash;
  // PGlite in a copy of the initdb'd template, not 'memory' (initdb, seconds of CPU, at each start)
  let database: Awaited<ReturnType<typeof freshPgliteDir>>;

  beforeAll(async () => {
    database = await freshPgliteDir();
    running = await startFlagServer(
      { ...TOKENS, port: 0, dataDir: database.dataDir, featuresWatchInterval: 0, logger: silentLogger },
      {},
      { handleSignals: false },
    );
    unleash = new Unleash({
      url: `${running.url}/api`,
      appName: 'sdk-test-app',
      instanceId: 'sdk-instance-1',
      customHeaders: { Authorization: CLIENT_TOKEN },
      refreshInterval: 200,
      metricsInterval: 300,
      disableAutoStart: false,
    });
    unleash.on('error', () => undefined);
    await once(unleash, 'synchronized');
  });

  afterAll(async () => {
    destroySdk(unleash);
    await running.close();
    await database.remove();
  });

  it('synchronises the example flags and evaluates them', () => {
    const names = unleash.getFeatureToggleDefinitions().map((t) => t.name);
    expect(names).toHaveLength(10);
    expect(unleash.isEnabled('new-checkout')).toBe(true);
    expect(unleash.isEnabled('legacy-export')).toBe(false);
    expect(unleash.isEnabled('beta-dashboard', { userId: 'alice' })).toBe(true);
    expect(unleash.isEnabled('beta-dashboard', { userId: 'mallory' })).toBe(false);
    expect(
      unleash.isEnabled('mobile-dark-mode', { properties: { appVersion: '2.4.0', platform: 'ios' } }),
    ).toBe(true);
    expect(
      unleash.isEnabled('mobile-dark-mode', { properties: { appVersion: '2.3.0', platform: 'ios' } }),
    ).toBe(false);
    expect(unleash.isEnabled('eu-cookie-banner-v2', { properties: { country: 'DE' } })).toBe(true);
    expect(unleash.isEnabled('eu-cookie-banner-v2', { properties: { country: 'US' } })).toBe(false);
    expect(unleash.getVariant('spring-sale-banner', { properties: { country: 'DE' } })).toMatchObject({
      name: 'banner-text',
      enabled: true,
      payload: { type: 'string', value: 'Spring sale: 20% off everything!' },
    });
  });

  it('registers, and its register post is stored', async () => {
    const instance = await waitFor(
      async () => (await running.flagServer.stores.clients.instances('sdk-test-app'))[0],
      5000,
      'the registration',
    );
    expect(instance.instanceId).toBe('sdk-instance-1');
    expect(instance.sdkVersion).toMatch(/^unleash-node-sdk:\d+\.\d+\.\d+/);
    expect(instance.strategies).toEqual(
      expect.arrayContaining(['default', 'flexibleRollout', 'userWithId', 'remoteAddress']),
    );
    expect(instance.interval).toBe(300);
  });

  it('sends usage metrics that are accepted and stored per toggle', async () => {
    for (let i = 0; i < 3; i += 1) unleash.isEnabled('new-checkout');
    unleash.isEnabled('legacy-export');
    unleash.getVariant('spring-sale-banner', { properties: { country: 'DE' } });
    const usage = await waitFor(
      async () => {
        const rows = await running.flagServer.stores.clients.usage({
          appName: 'sdk-test-app',
          featureName: 'new-checkout',
        });
        return rows.reduce((n, r) => n + r.yes, 0) >= 4 ? rows : undefined;
      },
      5000,
      'stored metrics',
    );
    expect(usage.every((r) => r.appName === 'sdk-test-app')).toBe(true);
    const legacy = await running.flagServer.stores.clients.usage({
      appName: 'sdk-test-app',
      featureName: 'legacy-export',
    });
    expect(legacy.reduce((n, r) => n + r.no, 0)).toBeGreaterThanOrEqual(1);
    const banner = await waitFor(
      async () => {
        const rows = await running.flagServer.stores.clients.usage({
          appName: 'sdk-test-app',
          featureName: 'spring-sale-banner',
        });
        return rows.some((r) => (r.variants['banner-text'] ?? 0) >= 1) ? rows : undefined;
      },
      5000,
      'variant counts',
    );
    expect(banner.length).toBeGreaterThan(0);
  });

  it('polls with the ETag and gets 304 while nothing changed', async () => {
    const unchanged = await waitFor(
      () => new Promise<boolean>((resolve) => unleash.once('unchanged', () => resolve(true))),
      3000,
      'a 304',
    );
    expect(unchanged).toBe(true);
  });
});
