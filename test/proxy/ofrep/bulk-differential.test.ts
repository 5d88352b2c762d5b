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
import { referenceSdk } from '../../support/reference-sdk';
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

/** The definitions as this test writes them (the arbitraries above). */
interface Variant {
  name: string;
  weight: number;
  payload?: { type: string; value: string };
}
interface Strategy {
  name: string;
  parameters: Record<string, string>;
  constraints?: unknown[];
  segments?: number[];
  variants?: Variant[];
}
interface Feature {
  name: string;
  enabled: boolean;
  impressionData?: boolean;
  strategies: Strategy[];
  variants?: Variant[];
  dependencies?: unknown[];
}

/** docs/openfeature.md "Types": payload type → flag type; any other toggle is boolean. */
const FLAG_TYPE = new Map([
  ['string', 'string'],
  ['csv', 'string'],
  ['number', 'number'],
  ['json', 'object'],
]);

function flagType(f: Feature): string {
  const variants = [...(f.variants ?? []), ...f.strategies.flatMap((s) => s.variants ?? [])];
  const types = new Set(variants.map((v) => (v.payload ? FLAG_TYPE.get(v.payload.type) : undefined)));
  const [only] = types;
  return variants.length > 0 && types.size === 1 && only !== undefined ? only : 'boolean';
}

/** The parameter holding a built-in percentage strategy's percentage. */
const PERCENTAGE: Record<string, string | undefined> = {
  flexibleRollout: 'rollout',
  gradualRolloutUserId: 'percentage',
};

/** docs/openfeature.md "Reasons": the first row of the table the deciding strategy fits. */
function reasonOf(s: Strategy, f: Feature): string {
  const percentage = PERCENTAGE[s.name];
  const below100 = percentage !== undefined && Number(s.parameters[percentage]) < 100;
  const pickedFrom = (s.variants?.length ? s.variants : (f.variants ?? [])).filter((v) => v.weight > 0);
  if (below100 || pickedFrom.length > 1) return 'SPLIT';
  if ((s.constraints?.length ?? 0) > 0 || (s.segments?.length ?? 0) > 0) return 'TARGETING_MATCH';
  if (s.name === 'default' || percentage !== undefined) return 'STATIC';
  return 'TARGETING_MATCH'; // userWithId, remoteAddress
}

/** What OFREP answers for one flag, written from the docs over the plain SDK's evaluation. */
function ofrepOracle(
  features: Feature[],
  context: Context,
): (name: string) => Record<string, unknown> | undefined {
  const whole = referenceSdk({ features, segments: SEGMENTS }, {});
  return (name) => {
    const f = features.find((x) => x.name === name);
    if (!f) return undefined;
    const answer = whole(name, context);
    if (answer === 'threw') throw new Error(`the plain SDK threw on ${name}`);
    const common = {
      key: name,
      variant: answer.variant.name,
      metadata: { impressionData: f.impressionData === true },
    };
    if (!f.enabled) return { ...common, reason: 'DISABLED' };
    let reason = 'DEFAULT';
    if (answer.enabled && f.strategies.length === 0) reason = 'STATIC';
    else if (answer.enabled) {
      // the deciding strategy: the first one that enables the toggle on its own for this context
      const deciding = f.strategies.find((s) => {
        const alone = { ...f, strategies: [s], dependencies: [] };
        const one = referenceSdk({ features: [alone], segments: SEGMENTS }, {})(name, context);
        return one !== 'threw' && one.enabled;
      });
      if (!deciding) throw new Error(`no strategy of ${name} enables it alone`);
      reason = reasonOf(deciding, f);
    }
    const type = flagType(f);
    if (type === 'boolean') return { ...common, reason, value: answer.enabled };
    const payload = answer.variant.payload as { type: string; value: string } | undefined;
    if (!answer.enabled || !payload) return { ...common, reason };
    const parseError = {
      key: name,
      errorCode: 'PARSE_ERROR',
      errorDetails: expect.stringContaining(name) as unknown,
    };
    if (type === 'string') return { ...common, reason, value: payload.value };
    if (type === 'number') {
      const n = payload.value.trim() === '' ? NaN : Number(payload.value);
      return Number.isFinite(n) ? { ...common, reason, value: n } : parseError;
    }
    try {
      const value: unknown = JSON.parse(payload.value);
      return typeof value === 'object' && value !== null ? { ...common, reason, value } : parseError;
    } catch {
      return parseError;
    }
  };
}

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
      const oracle = ofrepOracle(features, evaluated);
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
