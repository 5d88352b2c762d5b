/**
 * OFREP's bulk answer and its single-flag answer come from the plan of `/proxy` (constants, memo,
 * interned outcomes, each result serialised once per outcome and reason, its reason worked out once
 * per toggle). The oracle is written here from OFREP's mapping as docs/openfeature.md states it
 * (type from the definition's payload types, value from the evaluated variant's payload or
 * `enabled`, the reason from the deciding strategy by the docs' table, the variant name,
 * `metadata.impressionData`), over a plain `unleash-client` evaluation of the same definitions and
 * context; the deciding strategy is found by evaluating each strategy alone with the plain SDK. For
 * random definitions (several strategies with different reasons, variants with payloads of each
 * type, dependencies, segments) and repeated contexts, every entry of the bulk answer equals the
 * single answer for that flag and the oracle's result.
 */
import fc from 'fast-check';
import request from 'supertest';
import type { Context } from 'unleash-client';
import type { ProxyApp } from '../../../src/proxy/app';
import { ofrepOracle, type Feature } from '../../support/ofrep-oracle';
import { CLIENT_KEY, readyProxyFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

const RUNS = Number(process.env.OFREP_DIFF_RUNS ?? 40);
jest.setTimeout(Math.max(60_000, RUNS * 2000));

const BULK = '/ofrep/v1/evaluate/flags';
const NAMES = ['f0', 'f1', 'f2', 'f3', 'f4', 'f5'];

const constraintArb = fc.record({
  contextName: fc.constantFrom('plan', 'userId', 'region'),
  operator: fc.constantFrom('IN', 'NOT_IN'),
  values: fc.subarray(['free', 'pro', 'eu', 'u1', 'u2']),
});

const payloadArb = fc.oneof(
  fc.record({ type: fc.constant('string'), value: fc.constantFrom('a', 'b') }),
  fc.record({ type: fc.constant('json'), value: fc.constantFrom('{"x":1}', '[1]', '3', 'nope') }),
  fc.record({ type: fc.constant('number'), value: fc.constantFrom('1', '2.5', 'x', '') }),
  fc.record({ type: fc.constant('csv'), value: fc.constant('a,b') }),
);

const variantsArb = fc.array(
  fc.record(
    {
      name: fc.constantFrom('red', 'blue', 'green'),
      weight: fc.constantFrom(0, 500, 1000),
      stickiness: fc.constantFrom('default', 'userId'),
      payload: payloadArb,
    },
    { requiredKeys: ['name', 'weight', 'stickiness'] },
  ),
  { maxLength: 3 },
);

const strategyArb = fc.record(
  {
    name: fc.constantFrom(
      'default',
      'userWithId',
      'flexibleRollout',
      'gradualRolloutUserId',
      'remoteAddress',
    ),
    parameters: fc.record({
      userIds: fc.constantFrom('u1,u2', 'u3'),
      rollout: fc.constantFrom('0', '40', '100'),
      percentage: fc.constantFrom('50', '100'),
      stickiness: fc.constantFrom('userId', 'default'),
      groupId: fc.constant('g'),
      IPs: fc.constantFrom('127.0.0.1', '10.0.0.1', '::ffff:127.0.0.1'),
    }),
    constraints: fc.array(constraintArb, { maxLength: 2 }),
    segments: fc.constantFrom([], [1], [2]),
    variants: variantsArb,
  },
  { requiredKeys: ['name', 'parameters'] },
);

const featuresArb = fc
  .array(
    fc.record(
      {
        enabled: fc.boolean(),
        impressionData: fc.boolean(),
        strategies: fc.array(strategyArb, { maxLength: 3 }),
        variants: variantsArb,
        dependencies: fc.array(
          fc.record(
            { feature: fc.constantFrom(...NAMES), enabled: fc.boolean(), variants: fc.constant(['red']) },
            { requiredKeys: ['feature'] },
          ),
          { maxLength: 1 },
        ),
      },
      { requiredKeys: ['enabled', 'strategies'] },
    ),
    { minLength: 1, maxLength: NAMES.length },
  )
  .map((list) => list.map((f, i) => ({ name: NAMES[i], ...f })));

// Always a user: without one, a rollout or variant split sticky on it rolls a die (chance, not a difference).
const contextArb = fc.record(
  {
    targetingKey: fc.constantFrom('u1', 'u2', 'u3', 'u4'),
    plan: fc.constantFrom('free', 'pro'),
    region: fc.constantFrom('eu', 'us'),
  },
  { requiredKeys: ['targetingKey'] },
);

const SEGMENTS = [
  { id: 1, constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }] },
  { id: 2, constraints: [{ contextName: 'region', operator: 'IN', values: ['eu'] }] },
];

async function scenario(features: Feature[], contexts: Record<string, string>[]): Promise<void> {
  const payload = { version: 2, features, segments: SEGMENTS } as unknown as FeaturesPayload;
  const upstream = await new TestUpstream(payload).start();
  let app: ProxyApp | undefined;
  try {
    app = await readyProxyFor(upstream);
    const ready = app;
    const post = (path: string, context: Record<string, string>) =>
      request(ready).post(path).set('Authorization', CLIENT_KEY).send({ context });
    // each context twice: the second bulk answer comes from remembered results and entries
    for (const context of [...contexts, ...contexts]) {
      const bulk = await post(BULK, context);
      expect(bulk.status).toBe(200);
      const flags = (bulk.body as { flags: { key: string }[] }).flags;
      expect(flags.map((f) => f.key)).toEqual(NAMES.slice(0, features.length));
      // the context docs/openfeature.md describes: targetingKey as the user, other fields as
      // properties, the connection's address, the proxy's environment and app name
      const { targetingKey, ...properties } = context;
      const evaluated: Context = {
        userId: targetingKey,
        properties,
        environment: 'default',
        appName: 'flags-proxy',
        remoteAddress: '127.0.0.1',
      };
      const oracle = ofrepOracle(features, SEGMENTS, evaluated);
      for (const flag of flags) {
        const single = await post(`${BULK}/${flag.key}`, context);
        expect({ context, flag }).toEqual({ context, flag: single.body as unknown });
        expect({ context, flag }).toEqual({ context, flag: oracle(flag.key) });
      }
    }
  } finally {
    await app?.close();
    await upstream.stop();
  }
}

test('every entry of the bulk answer is the single answer for that flag, for random definitions and contexts', async () => {
  await fc.assert(
    fc.asyncProperty(
      featuresArb as fc.Arbitrary<Feature[]>,
      fc.array(contextArb, { minLength: 1, maxLength: 3 }),
      scenario,
    ),
    { numRuns: RUNS },
  );
});
