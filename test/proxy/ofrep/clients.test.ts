import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
import { OpenFeature as ServerFeatures } from '@openfeature/server-sdk';
import { ClientProviderEvents, OpenFeature as WebFeatures } from '@openfeature/web-sdk';
import { EventSource } from 'eventsource';
import { Unleash, type Context } from 'unleash-client';
import type { ProxyApp } from '../../../src/proxy/app';
import { CLIENT_KEY, readyProxyFor, waitFor } from '../../support/proxy';
import { TestUpstream } from '../../support/upstream';
import { ofrepFeatures, withToggle } from './fixtures';
import { destroySdk } from '../../support/sdk';

/** Node 20 has no EventSource; browsers do. The web provider looks for the global one. */
(globalThis as { EventSource?: unknown }).EventSource = EventSource;

const REFRESH_MS = 500;
const BOOLEAN_TOGGLES = [
  'always-on',
  'switched-off',
  'for-alice',
  'plan-pro',
  'beta-segment',
  'prod-only',
  'office-ip',
  'half-rollout',
  'with-variants',
  'user-named-disabled',
  'new-app-version',
  'child-of-always-on',
];
/** OpenFeature contexts and the unleash-client contexts they stand for. */
const CONTEXTS: Array<{ of: Record<string, string>; unleash: Context }> = [
  { of: {}, unleash: {} },
  { of: { targetingKey: 'alice' }, unleash: { userId: 'alice' } },
  { of: { targetingKey: 'beta-1', plan: 'pro' }, unleash: { userId: 'beta-1', properties: { plan: 'pro' } } },
  {
    of: { targetingKey: 'user-7', version: '2.1.0' },
    unleash: { userId: 'user-7', properties: { version: '2.1.0' } },
  },
  {
    of: { targetingKey: 'user-8', environment: 'production' },
    unleash: { userId: 'user-8', environment: 'production' },
  },
];

let upstream: TestUpstream;
let app: ProxyApp;
let server: Server;
let baseUrl: string;
let unleash: Unleash;
/** Requests the proxy received, by method and path. */
const received: string[] = [];

function sdkContext(context: Context): Context {
  // What the proxy adds: the address it saw, and the default environment.
  return { environment: 'default', remoteAddress: '127.0.0.1', ...context };
}

beforeAll(async () => {
  upstream = await new TestUpstream(ofrepFeatures()).start();
  app = await readyProxyFor(upstream, { refreshInterval: REFRESH_MS });
  server = http.createServer((req, res) => {
    received.push(`${req.method} ${(req.url ?? '').split('?')[0]}`);
    app(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  unleash = new Unleash({
    url: upstream.url,
    appName: 'reference-sdk',
    customHeaders: { Authorization: upstream.token },
    disableMetrics: true,
    refreshInterval: 60_000,
    skipInstanceCountWarning: true,
  });
  await new Promise<void>((resolve) => unleash.once('synchronized', () => resolve()));
});

afterAll(async () => {
  await ServerFeatures.close();
  await WebFeatures.close();
  destroySdk(unleash);
  await app.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await upstream.stop();
});

describe('@openfeature/server-sdk with @openfeature/ofrep-provider', () => {
  beforeAll(async () => {
    await ServerFeatures.setProviderAndWait(
      'ofrep-server',
      new OFREPProvider({ baseUrl, headers: [['Authorization', `Bearer ${CLIENT_KEY}`]] }),
    );
  });

  test('boolean results equal unleash-client isEnabled for every toggle and context', async () => {
    const client = ServerFeatures.getClient('ofrep-server');
    for (const { of, unleash: context } of CONTEXTS) {
      for (const name of BOOLEAN_TOGGLES) {
        const got = await client.getBooleanValue(name, false, of);
        const expected = unleash.isEnabled(name, sdkContext(context));
        expect({ name, of, enabled: got }).toEqual({ name, of, enabled: expected });
      }
    }
  });

  test('typed results equal the variant payloads unleash-client picks', async () => {
    const client = ServerFeatures.getClient('ofrep-server');
    const context = { targetingKey: 'alice', plan: 'pro' };
    const reference = sdkContext({ userId: 'alice', properties: { plan: 'pro' } });
    expect(await client.getStringValue('banner-text', 'none', context)).toBe(
      unleash.getVariant('banner-text', reference).payload?.value,
    );
    expect(await client.getNumberValue('max-items', -1, context)).toBe(
      Number(unleash.getVariant('max-items', reference).payload?.value),
    );
    expect(await client.getObjectValue('theme-config', {}, context)).toEqual(
      JSON.parse(unleash.getVariant('theme-config', reference).payload?.value ?? 'null'),
    );
  });

  test('details carry the reason and variant; an unknown flag gives FLAG_NOT_FOUND and the default', async () => {
    const client = ServerFeatures.getClient('ofrep-server');
    const details = await client.getBooleanDetails('for-alice', false, { targetingKey: 'alice' });
    expect(details).toMatchObject({ value: true, reason: 'TARGETING_MATCH', variant: 'disabled' });
    // A disabled flag has no value, so the caller's default applies. (ofrep-provider 0.1 predates
    // OFREP's code-default answers and reports it as a GENERAL error; the value is still the default.)
    const off = await client.getBooleanDetails('switched-off', true);
    expect(off).toMatchObject({ value: true, errorCode: 'GENERAL' });
    const unknown = await client.getBooleanDetails('no-such-flag', true);
    expect(unknown).toMatchObject({ value: true, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' });
  });
});

describe('@openfeature/web-sdk with @openfeature/ofrep-web-provider', () => {
  test('boolean and typed results equal unleash-client for each context', async () => {
    const provider = new OFREPWebProvider({
      baseUrl,
      headers: [['Authorization', `Bearer ${CLIENT_KEY}`]],
      pollInterval: 0,
      changeDetection: 'none',
      cacheMode: 'disabled',
    });
    await WebFeatures.setProviderAndWait('ofrep-web', provider, CONTEXTS[0].of);
    const client = WebFeatures.getClient('ofrep-web');
    for (const { of, unleash: context } of CONTEXTS) {
      await WebFeatures.setContext('ofrep-web', of);
      for (const name of BOOLEAN_TOGGLES) {
        const got = client.getBooleanValue(name, false);
        const expected = unleash.isEnabled(name, sdkContext(context));
        expect({ name, of, enabled: got }).toEqual({ name, of, enabled: expected });
      }
    }
    await WebFeatures.setContext('ofrep-web', { targetingKey: 'alice', plan: 'pro' });
    const reference = sdkContext({ userId: 'alice', properties: { plan: 'pro' } });
    expect(client.getStringValue('banner-text', 'none')).toBe('Hello!');
    expect(client.getNumberValue('max-items', -1)).toBe(
      Number(unleash.getVariant('max-items', reference).payload?.value),
    );
    expect(client.getObjectValue('theme-config', {})).toEqual({ mode: 'dark', contrast: 2 });
  });

  test('a flag flipped on the upstream reaches ConfigurationChanged within one refresh interval + 1 s, without polling', async () => {
    const provider = new OFREPWebProvider({
      baseUrl,
      headers: [['Authorization', `Bearer ${CLIENT_KEY}`]],
      pollInterval: 0,
      changeDetection: 'sse',
      cacheMode: 'disabled',
    });
    await WebFeatures.setProviderAndWait('ofrep-sse', provider, { targetingKey: 'alice' });
    const client = WebFeatures.getClient('ofrep-sse');
    expect(client.getBooleanValue('switched-off', false)).toBe(false);
    await waitFor(() => app.changeStreams.size >= 1);
    const changed = new Promise<{ at: number; flags: string[] }>((resolve) => {
      client.addHandler(ClientProviderEvents.ConfigurationChanged, (details) => {
        resolve({ at: Date.now(), flags: details?.flagsChanged ?? [] });
      });
    });
    // Quiet period: no polling means no bulk evaluation while nothing changes.
    const bulkBefore = received.filter((r) => r === 'POST /ofrep/v1/evaluate/flags').length;
    await new Promise((r) => setTimeout(r, 3 * REFRESH_MS));
    expect(received.filter((r) => r === 'POST /ofrep/v1/evaluate/flags').length).toBe(bulkBefore);

    const flippedAt = Date.now();
    upstream.setFeatures(withToggle(ofrepFeatures(), 'switched-off', true));
    const event = await changed;
    expect(event.at - flippedAt).toBeLessThan(REFRESH_MS + 1000);
    expect(event.flags).toContain('switched-off');
    expect(client.getBooleanValue('switched-off', false)).toBe(true);
    expect(received).toContain('GET /ofrep/v1/flag-changes');
    upstream.setFeatures(ofrepFeatures());
  });
});
