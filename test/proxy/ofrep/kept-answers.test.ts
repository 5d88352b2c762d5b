/**
 * OFREP's bulk answer for a repeated pure context is kept like `/proxy`'s: from its second sighting
 * on it is served without evaluating again, with the same flags and the same usage counts as an
 * evaluation, replaced at once by new definitions, and never kept when chance decides a flag.
 */
import request from 'supertest';
import type { ProxyApp } from '../../../src/proxy/app';
import type { Evaluator } from '../../../src/proxy/engine/evaluator';
import type { Plan } from '../../../src/proxy/engine/plan';
import type { FlatToggles } from '../../../src/proxy/engine/compiled/flat';
import { CLIENT_KEY, readyProxyFor, waitFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';
import { reportedUsage } from '../../support/usage-reports';

const BULK = '/ofrep/v1/evaluate/flags';

function definitions(enabled: boolean, withChance = false): FeaturesPayload {
  return {
    version: 2,
    features: [
      {
        name: 'for-u1',
        enabled,
        strategies: [{ name: 'userWithId', parameters: { userIds: 'u1' } }],
        variants: [
          { name: 'blue', weight: 1000, stickiness: 'default', payload: { type: 'string', value: 'b' } },
        ],
      },
      {
        name: 'by-plan',
        enabled: true,
        strategies: [
          { name: 'default', constraints: [{ contextName: 'plan', operator: 'IN', values: ['pro'] }] },
        ],
      },
      { name: 'fixed', enabled: true, strategies: [] },
      ...(withChance
        ? [
            {
              name: 'coin',
              enabled: true,
              strategies: [{ name: 'gradualRolloutRandom', parameters: { percentage: '50' } }],
            },
          ]
        : []),
    ],
  };
}

let upstream: TestUpstream;
let app: ProxyApp | undefined;

beforeEach(async () => {
  upstream = await new TestUpstream(definitions(true)).start();
});

afterEach(async () => {
  await app?.close();
  app = undefined;
  await upstream.stop();
});

const bulk = (proxy: ProxyApp, targetingKey = 'u1') =>
  request(proxy)
    .post(BULK)
    .set('authorization', CLIENT_KEY)
    .send({ context: { targetingKey, plan: 'pro' } })
    .expect(200);

/**
 * Counts the evaluations of one toggle of the evaluator serving the key, however the engine
 * evaluates it: by its compiled object, or from the answer loop's flat layout (`compiled/flat.ts`).
 */
function evaluationsOf(proxy: ProxyApp, name: string): () => number {
  const evaluator = proxy.environments.environments[0].all.evaluator as Evaluator;
  const state = Reflect.get(evaluator, 'state') as { plan: Plan; flat: FlatToggles };
  const toggle = state.plan.byName.get(name);
  if (!toggle?.engine) throw new Error(`no compiled toggle ${name}`);
  const byObject = jest.spyOn(toggle.engine, 'evaluate');
  const flat = jest.spyOn(state.flat, 'outcome');
  // a flat answer below 0 hands the toggle to its object (counted there)
  return () =>
    byObject.mock.calls.length +
    flat.mock.calls.filter(
      ([index], k) => index === toggle.index && (flat.mock.results[k].value as number) >= 0,
    ).length;
}

describe("OFREP's kept bulk answers", () => {
  test('a repeated context is evaluated twice, then served kept: same flags, same usage counts', async () => {
    app = await readyProxyFor(upstream, { refreshInterval: 50 });
    const proxy = app;
    const evaluations = evaluationsOf(proxy, 'for-u1');
    const answers = [];
    for (let i = 0; i < 4; i += 1) answers.push((await bulk(proxy)).body as { flags: unknown[] });
    // the first sighting is evaluated and not kept, the second evaluated and kept, then served kept
    expect(evaluations()).toBe(2);
    for (const answer of answers) expect(answer.flags).toEqual(answers[0].flags);
    expect(answers[0].flags).toContainEqual({
      key: 'for-u1',
      reason: 'TARGETING_MATCH',
      variant: 'blue',
      value: 'b',
      metadata: expect.any(Object) as unknown,
    });
    // another user is its own answer
    const other = (await bulk(proxy, 'u2')).body as { flags: { key: string; reason: string }[] };
    expect(other.flags.find((f) => f.key === 'for-u1')).toEqual({
      key: 'for-u1',
      reason: 'DEFAULT',
      variant: 'disabled',
      metadata: { impressionData: false },
    });

    // new definitions: the kept answer goes at once
    const revision = proxy.features.revision;
    upstream.setFeatures(definitions(false));
    await waitFor(() => proxy.features.revision !== revision);
    for (let i = 0; i < 3; i += 1) {
      const flags = ((await bulk(proxy)).body as { flags: { key: string; reason: string }[] }).flags;
      expect(flags.find((f) => f.key === 'for-u1')?.reason).toBe('DISABLED');
    }
    await proxy.close(); // flushes usage upstream
    app = undefined;
    expect(reportedUsage(upstream)).toEqual({
      'for-u1': { yes: 4, no: 4, variants: { blue: 4, disabled: 4 } },
      'by-plan': { yes: 8, no: 0, variants: { disabled: 8 } },
      fixed: { yes: 8, no: 0, variants: { disabled: 8 } },
    });
  });

  test('an answer chance decides is never kept: every request is evaluated', async () => {
    upstream.setFeatures(definitions(true, true));
    app = await readyProxyFor(upstream, {});
    const evaluations = evaluationsOf(app, 'for-u1');
    for (let i = 0; i < 4; i += 1) await bulk(app);
    expect(evaluations()).toBe(4);
  });
});
