/**
 * The memo within its budget: when a new row of results does not fit, the oldest rows are
 * forgotten one at a time, not every memo at once. Observed through the SDK evaluations an
 * `Evaluator` asks for (a remembered result asks for none).
 */
import type { Context } from 'unleash-client';
import { silentLogger } from '../../../src/common/logging/logger';
import type { ProxyApp } from '../../../src/proxy/app';
import { DEFAULT_BUDGETS, Evaluator } from '../../../src/proxy/engine/evaluator';
import { EvaluationMemory } from '../../../src/proxy/engine/evaluation-memory';
import type { FeatureInterface } from 'unleash-client/lib/feature';
import type { FastEvaluation, FeatureRepository } from '../../../src/proxy/upstream/feature-repository';
import { readyProxyFor } from '../../support/proxy';
import { TestUpstream, type FeaturesPayload } from '../../support/upstream';

/**
 * Two toggles whose results depend only on `plan`: remembered per plan. Their operator is one the
 * engine does not compile (the SDK answers it false), so every evaluation is the SDK's and is seen.
 */
const payload: FeaturesPayload = {
  version: 2,
  features: ['a', 'b'].map((name) => ({
    name,
    enabled: true,
    strategies: [
      {
        name: 'default',
        constraints: [{ contextName: 'plan', operator: 'FUTURE_OPERATOR', values: ['p1'] }],
      },
    ],
  })),
};

/**
 * One memo row for `plan` = `pN`: both toggles read only `plan` and are one group, remembered in one
 * row under the key `-2:pN` (5 characters, 2 bytes each), plus 96 bytes, plus 8 per toggle.
 */
const ROW = 2 * 5 + 96 + 8 * 2;

const upstream = new TestUpstream(payload);
let app: ProxyApp;

beforeAll(async () => {
  await upstream.start();
  app = await readyProxyFor(upstream);
});
afterAll(async () => {
  await app.close();
  await upstream.stop();
});

/** The app's repository, counting the SDK evaluations asked of it. */
function counted(features: FeatureRepository): { repository: FeatureRepository; evaluations: () => number } {
  let evaluations = 0;
  const fast = (): FastEvaluation | undefined => {
    const inner = features.fast?.();
    if (!inner) return undefined;
    return {
      ...inner,
      resolve: (name: string, enhanced: Context) => {
        evaluations += 1;
        return inner.resolve(name, enhanced);
      },
      resolveFeature: (feature: FeatureInterface, enhanced: Context) => {
        evaluations += 1;
        return inner.resolveFeature(feature, enhanced);
      },
    };
  };
  const repository = new Proxy(features, {
    get: (target, property) => {
      if (property === 'fast') return fast;
      const value: unknown = Reflect.get(target, property);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { repository, evaluations: () => evaluations };
}

test('a full memo forgets its oldest row to keep a new one, and keeps the rest', async () => {
  const { repository, evaluations } = counted(app.features);
  // room for two rows: two plans of two toggles
  const evaluator = new Evaluator(
    repository,
    silentLogger,
    new EvaluationMemory({ ...DEFAULT_BUDGETS, memoBytes: 2 * ROW + 50 }),
  );
  let user = 0;
  // a new user every time, so no whole answer is kept: every toggle is looked up in its memo
  const ask = (plan: string) => {
    const before = evaluations();
    user += 1;
    const reply = evaluator.reply({ kind: 'all' }, { userId: `u${user}`, properties: { plan } }, undefined);
    expect(reply.notModified).toBe(false);
    return evaluations() - before;
  };
  expect(ask('p1')).toBe(2);
  expect(ask('p2')).toBe(2);
  expect(ask('p1')).toBe(0); // both remembered
  // p3 needs room for a row: the oldest (p1's) goes, p2's stays
  expect(ask('p3')).toBe(2);
  expect(ask('p2')).toBe(0);
  expect(ask('p3')).toBe(0);
  expect(ask('p1')).toBe(2);
});

test('evaluators sharing one memory share one memo budget: a full one takes rows from each in turn', async () => {
  const a = counted(app.features);
  const b = counted(app.features);
  // room for two rows in all, as one app's environments and views share it
  const memory = new EvaluationMemory({ ...DEFAULT_BUDGETS, memoBytes: 2 * ROW + 50 });
  const first = new Evaluator(a.repository, silentLogger, memory);
  const second = new Evaluator(b.repository, silentLogger, memory);
  let user = 0;
  const ask = (evaluator: Evaluator, counter: () => number, plan: string) => {
    const before = counter();
    user += 1;
    evaluator.reply({ kind: 'all' }, { userId: `u${user}`, properties: { plan } }, undefined);
    return counter() - before;
  };
  expect(ask(first, a.evaluations, 'p1')).toBe(2);
  expect(ask(first, a.evaluations, 'p2')).toBe(2);
  expect(memory.memo.size).toBe(2);
  // the second evaluator keeps its row: the first gives up its oldest (p1's)
  expect(ask(second, b.evaluations, 'p3')).toBe(2);
  expect(memory.memo.size).toBe(2);
  expect(ask(second, b.evaluations, 'p3')).toBe(0);
  expect(ask(first, a.evaluations, 'p2')).toBe(0);
  // full again: this time the second gives up its row (its turn), then the first its oldest (p2's)
  expect(ask(first, a.evaluations, 'p1')).toBe(2);
  expect(ask(second, b.evaluations, 'p3')).toBe(2);
  expect(ask(first, a.evaluations, 'p1')).toBe(0);
  expect(memory.memo.size).toBe(2);
  // a closed evaluator gives its rows back
  second.close();
  expect(memory.memo.bytes).toBeLessThanOrEqual(2 * ROW + 50);
  expect(memory.memo.size).toBe(1);
});

test("a new user's answer for fields seen twice comes from their template, held in the memo budget", async () => {
  const { repository, evaluations } = counted(app.features);
  const memory = new EvaluationMemory({ ...DEFAULT_BUDGETS, memoBytes: 10_000 });
  const evaluator = new Evaluator(repository, silentLogger, memory);
  // what the answers must be: the same evaluator without any memo
  const reference = new Evaluator(
    app.features,
    silentLogger,
    new EvaluationMemory({ ...DEFAULT_BUDGETS, memoBytes: 0 }),
  );
  let user = 0;
  /** A new user's answer for `plan`, checked against the reference's. */
  const answerFor = (from: Evaluator, plan: string) => {
    user += 1;
    const context = { userId: `u${user}`, properties: { plan } };
    const reply = from.reply({ kind: 'all' }, context, undefined);
    const expected = reference.reply({ kind: 'all' }, context, undefined);
    if (reply.notModified || expected.notModified) throw new Error('a new user is never answered 304');
    expect(reply.body.toString()).toBe(expected.body.toString());
  };
  const ask = (plan: string) => {
    const before = evaluations();
    answerFor(evaluator, plan);
    return evaluations() - before;
  };
  expect(ask('p1')).toBe(2);
  expect(memory.memo.size).toBe(1); // p1's row
  expect(ask('p1')).toBe(0);
  expect(memory.memo.size).toBe(2); // and, on the second sighting, p1's template
  const template = memory.memo.bytes - ROW;
  expect(template).toBeGreaterThan(ROW);
  expect(ask('p1')).toBe(0);
  expect(ask('p2')).toBe(2);
  expect(ask('p2')).toBe(0);
  expect(memory.memo.size).toBe(4);
  // closed, the evaluator gives its rows and templates back
  evaluator.close();
  expect(memory.memo.bytes).toBe(0);
  expect(memory.memo.size).toBe(0);

  // a budget with room for one template and two rows: templates and rows give way in turn, within it
  const tight = new EvaluationMemory({ ...DEFAULT_BUDGETS, memoBytes: template + 2 * ROW });
  const small = new Evaluator(counted(app.features).repository, silentLogger, tight);
  for (let round = 0; round < 3; round++)
    for (const plan of ['p1', 'p2', 'p3']) {
      for (let i = 0; i < 3; i++) {
        answerFor(small, plan);
        expect(tight.memo.bytes).toBeLessThanOrEqual(template + 2 * ROW);
      }
    }
  expect(tight.memo.size).toBeGreaterThan(0);
  small.close();
  reference.close();
});
