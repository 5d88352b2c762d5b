import { InMemStorageProvider, Unleash, type ClientFeaturesResponse } from 'unleash-client';
import Repository from 'unleash-client/lib/repository';
import { resolveBootstrapProvider } from 'unleash-client/lib/repository/bootstrap-provider';
import { REACH_INS, type SdkInstance } from '../../../src/proxy/upstream/sdk/reach-ins';
import { sampleFeatures } from '../../support/fixtures';
import { destroySdk } from '../../support/sdk';
import { TestUpstream } from '../../support/upstream';

/**
 * The contract between the proxy and the installed `unleash-client`: every private part the proxy
 * relies on (src/proxy/upstream/sdk/reach-ins.ts) is checked on a real `Unleash`, built as the
 * proxy builds it (a repository of the SDK's class passed as `repository`) and synchronised from a
 * loopback upstream. A failure names the reach-in an upgrade broke: the code in
 * src/proxy/upstream/sdk/ that uses it must follow the SDK before the pin moves.
 */
let upstream: TestUpstream;
let sdk: SdkInstance;

beforeAll(async () => {
  upstream = await new TestUpstream(sampleFeatures()).start();
  const appName = 'sdk-contract';
  const instanceId = 'sdk-contract-1';
  const headers = { Authorization: upstream.token };
  const repository = new Repository({
    url: `${upstream.url}/`,
    appName,
    instanceId,
    connectionId: instanceId,
    refreshInterval: 60_000,
    headers,
    bootstrapProvider: resolveBootstrapProvider({}, appName, instanceId),
    storageProvider: new InMemStorageProvider<ClientFeaturesResponse>(),
    mode: { type: 'polling', format: 'full' },
  });
  const unleash = new Unleash({
    url: `${upstream.url}/`,
    appName,
    instanceId,
    customHeaders: headers,
    refreshInterval: 60_000,
    metricsInterval: 60_000,
    repository,
    skipInstanceCountWarning: true,
  });
  unleash.on('error', () => undefined);
  sdk = { unleash, repository };
  await new Promise<void>((resolve) => unleash.once('synchronized', () => resolve()));
});

afterAll(async () => {
  destroySdk(sdk.unleash);
  await upstream.stop();
});

test('the SDK under test synchronised from the loopback upstream', () => {
  expect(upstream.requests.some((r) => r.method === 'GET' && r.path === '/api/client/features')).toBe(true);
  expect(sdk.unleash.isEnabled('always-on')).toBe(true);
  expect(sdk.unleash.isEnabled('switched-off')).toBe(false);
});

describe.each(REACH_INS.map((r) => [r.name, r] as const))('reach-in %s', (name, reachIn) => {
  test('the installed unleash-client still has it', () => {
    let problem: string | undefined;
    try {
      problem = reachIn.check(sdk);
    } catch (err) {
      problem = `its check threw ${String(err)}`;
    }
    if (problem !== undefined) {
      throw new Error(
        `unleash-client broke the reach-in "${name}" (relied on: ${reachIn.reliesOn}; used by ` +
          `${reachIn.usedBy}, in src/proxy/upstream/sdk/): ${problem}`,
      );
    }
  });
});

test('the checks of instance fields fail on an SDK that lacks them', () => {
  const empty = { unleash: {}, repository: {} } as unknown as SdkInstance;
  const onInstances = REACH_INS.filter((r) => /^(Unleash|Client|Metrics|Repository)#/.test(r.name));
  expect(onInstances.length).toBeGreaterThanOrEqual(9);
  for (const reachIn of onInstances)
    expect([reachIn.name, reachIn.check(empty)]).toEqual([reachIn.name, expect.any(String)]);
});
