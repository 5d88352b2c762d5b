import { once } from 'node:events';
import request from 'supertest';
import { Unleash } from 'unleash-client';
import { createApp, type ProxyApp } from '../../src/proxy/app';
import { silentLogger } from '../../src/common/logging/logger';
import { LoopbackServers } from '../support/listen';
import { everyEnvironmentReady, waitFor } from '../support/proxy';
import { destroySdk } from '../support/sdk';
import { UnleashServer } from './unleash-server';

/**
 * The proxy in front of a real open-source unleash-server (from npm, on a fresh PostgreSQL
 * database), configured the way an Unleash Edge deployment is: upstream client tokens of two
 * environments, frontend and client tokens that Unleash issues and revokes.
 */
jest.setTimeout(60_000);

let unleash: UnleashServer;
let app: ProxyApp;
const servers = new LoopbackServers();
const sdks: Unleash[] = [];
const tokens = { feDev: '', feProd: '', beDev: '', beProd: '' };
const REVALIDATE_MS = 500;

beforeAll(async () => {
  unleash = await new UnleashServer().start();
  await unleash.flag('dev-only', ['development']);
  await unleash.flag('prod-only', ['production']);
  await unleash.flag('everywhere', ['development', 'production']);
  tokens.feDev = await unleash.token('frontend', 'development');
  tokens.feProd = await unleash.token('frontend', 'production');
  tokens.beDev = await unleash.token('backend', 'development');
  tokens.beProd = await unleash.token('backend', 'production');
  app = createApp(
    {
      // An Edge deployment's variables: the server's base URL, its client tokens, no client keys.
      logger: silentLogger,
      refreshInterval: 500,
      metricsInterval: 60_000,
    },
    {
      UPSTREAM_URL: unleash.url,
      TOKENS: `${tokens.beDev},${tokens.beProd}`,
      FLAGS_TOKEN_REVALIDATE_INTERVAL: String(REVALIDATE_MS),
    },
  );
  await everyEnvironmentReady(app);
});

afterAll(async () => {
  for (const sdk of sdks.splice(0)) destroySdk(sdk);
  await servers.closeAll();
  await app?.close();
  await unleash?.stop();
});

const enabled = (body: { toggles: Array<{ name: string; enabled: boolean }> }): string[] =>
  body.toggles
    .filter((t) => t.enabled)
    .map((t) => t.name)
    .sort();

test('each frontend token sees its own environment’s flags on /proxy and /api/frontend', async () => {
  for (const path of ['/proxy', '/api/frontend', '/api/proxy']) {
    const dev = await request(app).get(path).set('Authorization', tokens.feDev);
    const prod = await request(app).get(path).set('Authorization', tokens.feProd);
    expect([path, dev.status, prod.status]).toEqual([path, 200, 200]);
    expect(enabled(dev.body)).toEqual(['dev-only', 'everywhere']);
    expect(enabled(prod.body)).toEqual(['everywhere', 'prod-only']);
  }
});

test('client tokens are refused on frontend paths, and wrong tokens everywhere', async () => {
  expect((await request(app).get('/proxy').set('Authorization', tokens.beDev)).status).toBe(401);
  expect((await request(app).get('/proxy').set('Authorization', '*:development.0000wrong')).status).toBe(401);
  expect((await request(app).get('/api/client/features').set('Authorization', tokens.feDev)).status).toBe(
    401,
  );
});

test.each([
  ['development', 'beDev', true],
  ['production', 'beProd', false],
] as const)(
  'a real unleash-client pointed at the proxy’s /api with a %s client token sees that environment',
  async (_env, which, isDev) => {
    const url = await servers.listen(app);
    const sdk = new Unleash({
      url: `${url}/api`,
      appName: `it-backend-${which}`,
      customHeaders: { Authorization: tokens[which] },
      refreshInterval: 60_000,
      disableMetrics: true,
    });
    sdks.push(sdk);
    sdk.on('error', () => undefined);
    await once(sdk, 'synchronized');
    expect(sdk.isEnabled('dev-only')).toBe(isDev);
    expect(sdk.isEnabled('prod-only')).toBe(!isDev);
    expect(sdk.isEnabled('everywhere')).toBe(true);
  },
);

test('a deleted frontend token is refused within a revalidation interval once Unleash stops confirming it', async () => {
  expect((await request(app).get('/proxy').set('Authorization', tokens.feProd)).status).toBe(200);
  await unleash.admin('DELETE', `/api-tokens/${encodeURIComponent(tokens.feProd)}`);
  // Unleash 8.2 keeps confirming a deleted token from its token cache until it restarts.
  await unleash.restart();
  const deadline = Date.now() + 4 * REVALIDATE_MS + 5_000;
  await waitFor(
    async () => (await request(app).get('/proxy').set('Authorization', tokens.feProd)).status === 401,
    deadline - Date.now(),
  );
  // the other environment's token is untouched
  expect((await request(app).get('/proxy').set('Authorization', tokens.feDev)).status).toBe(200);
});
