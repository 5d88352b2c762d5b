/**
 * Toggles the engine does not compile (a custom strategy, an operator it does not know) are
 * evaluated by the SDK as before, counted in `flags_proxy_toggles_sdk_evaluated` and
 * named at debug level once per revision; the engine's own toggles are not among them.
 */
import request from 'supertest';
import { Strategy, type Context } from 'unleash-client';
import type { ProxyApp } from '../../../src/proxy/app';
import { capturingLogger } from '../../support/logger';
import { CLIENT_KEY, readyProxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

class PlanStrategy extends Strategy {
  constructor() {
    super('plan');
  }
  override isEnabled(parameters: { plans?: string }, context: Context): boolean {
    return (parameters.plans ?? '').split(',').includes(String(context.properties?.plan));
  }
}

const FEATURES: FeaturesPayload = {
  version: 2,
  features: [
    { name: 'custom', enabled: true, strategies: [{ name: 'plan', parameters: { plans: 'pro' } }] },
    {
      name: 'future-operator',
      enabled: true,
      strategies: [
        { name: 'default', constraints: [{ contextName: 'plan', operator: 'STR_EQUALS', values: ['pro'] }] },
      ],
    },
    {
      name: 'compiled',
      enabled: true,
      strategies: [
        { name: 'default', constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }] },
      ],
    },
    { name: 'constant', enabled: true, strategies: [] },
  ],
};

describe('toggles the engine does not compile', () => {
  let upstream: TestUpstream;
  let app: ProxyApp;
  const logger = capturingLogger();

  beforeAll(async () => {
    upstream = await new TestUpstream(FEATURES).start();
    app = await readyProxyFor(upstream, { customStrategies: [new PlanStrategy()], logger });
  });
  afterAll(async () => {
    await app.close();
    await upstream.stop();
  });

  test('are answered by the SDK, next to the compiled ones', async () => {
    const res = await request(app).get('/proxy?properties[plan]=pro').set('Authorization', CLIENT_KEY);
    expect(res.status).toBe(200);
    const names = (res.body as { toggles: { name: string }[] }).toggles.map((t) => t.name);
    // the SDK answers false for an operator it does not know: the toggle stays disabled
    expect(names).toEqual(['compiled', 'constant', 'custom']);
  });

  test('are counted by the metric and named once at debug level', async () => {
    await waitFor(async () => {
      const res = await request(app)
        .get('/proxy/internal-backstage/prometheus')
        .set('Authorization', CLIENT_KEY);
      return res.text.includes('flags_proxy_toggles_sdk_evaluated{environment="default"} 2');
    });
    const named = logger.lines.filter((l) => l.msg.includes('the engine does not compile'));
    expect(named).toHaveLength(1);
    expect(named[0].level).toBe('debug');
    expect(named[0].msg).toContain('custom, future-operator');
    expect(named[0].msg).not.toContain('compiled,');
  });
});
