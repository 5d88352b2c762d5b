/**
 * The evaluation cost of a new user's answer listing every toggle, in process (no HTTP): the
 * proxy's `Evaluator` on the bench's generated definitions, once with the engine's compiled
 * toggles and once with every toggle handed to the SDK (what the code did before the engine).
 * `node dist/bench/engine-cost.js [flags] [requests] [sdk|engine|toggle-engine|memo]`; add `--cpu-prof` to profile it.
 */
import { silentLogger } from '../src/common/logging/logger';
import { Evaluator } from '../src/proxy/engine/evaluator';
import { FlatToggles } from '../src/proxy/engine/compiled/flat';
import type { Context } from 'unleash-client';
import type { RequestScope } from '../src/proxy/engine/compiled/scope';
import type { Plan } from '../src/proxy/engine/plan';
import type { FeatureInterface } from '../src/proxy/upstream/sdk/types';
import { inProcessProxy } from './in-process';

const FLAGS = Number(process.argv[2] ?? 2000);
const REQUESTS = Number(process.argv[3] ?? 2000);

async function main(): Promise<void> {
  const { app, close } = await inProcessProxy(FLAGS, 'engine-cost');
  /** An evaluator of its own, with the engine (or the memo) taken out of its plan when asked. */
  const configured = (label: string, stripEngine: boolean, noMemo = false) => {
    const evaluator = new Evaluator(app.features, silentLogger);
    // compiles the revision
    evaluator.reply({ kind: 'all' }, { userId: 'warm' }, undefined);
    const state = Reflect.get(evaluator, 'state') as { plan: Plan };
    const plan = state.plan;
    if (stripEngine) for (const toggle of plan.toggles) Reflect.set(toggle, 'engine', undefined);
    if (noMemo) for (const toggle of plan.toggles) Reflect.set(toggle, 'group', -1);
    // the flat layout is made from the compiled toggles: made again without what was taken out
    if (stripEngine || noMemo) Reflect.set(state, 'flat', new FlatToggles(plan.toggles));
    let next = 0;
    const best: number[] = [];
    /** `count` new users' answers; their CPU time per request is kept. */
    const run = (count: number) => {
      const cpu = process.cpuUsage();
      for (let i = next; i < next + count; i++) {
        evaluator.reply(
          { kind: 'all' },
          {
            userId: `user-${label}-${i}`,
            sessionId: `session-${i}`,
            appName: 'web',
            remoteAddress: '10.1.2.3',
            properties: { region: i % 2 ? 'eu' : 'us', email: `u${i}@example.com` },
          },
          undefined,
        );
      }
      next += count;
      const used = process.cpuUsage(cpu);
      best.push((used.user + used.system) / count);
    };
    const report = () => {
      const sorted = [...best.slice(1)].sort((a, b) => a - b);
      const median = sorted[Math.floor(sorted.length / 2)];
      console.log(
        `${label}: ${FLAGS} flags, new users: ${sorted[0].toFixed(1)} µs CPU per request at best, ${median.toFixed(1)} median of ${sorted.length} slices (${((sorted[0] * 1000) / FLAGS).toFixed(1)} ns per toggle at best)`,
      );
    };
    return { run, report };
  };
  // per toggle: the engine's evaluation against the SDK's (`resolveFeature`), every non-constant toggle, new users
  const only = process.argv[4];
  const perToggle = () => {
    const evaluator = new Evaluator(app.features, silentLogger);
    evaluator.reply({ kind: 'all' }, { userId: 'warm' }, undefined);
    const state = Reflect.get(evaluator, 'state') as { plan: Plan; scope: RequestScope };
    const fast = app.features.fast?.();
    if (!fast) throw new Error('no fast evaluation');
    const toggles = state.plan.toggles.filter((t) => t.engine !== undefined && t.feature !== undefined);
    const contextOf = (i: number) =>
      fast.enhance({
        userId: `user-${i}`,
        sessionId: `session-${i}`,
        remoteAddress: '10.1.2.3',
        properties: { region: i % 2 ? 'eu' : 'us', email: `u${i}@example.com` },
      });
    const time = (label: string, one: (context: Context) => void) => {
      const users = Math.max(50, Math.floor(REQUESTS / 4));
      for (let i = 0; i < 50; i++) one(contextOf(-i));
      const cpu = process.cpuUsage();
      for (let i = 0; i < users; i++) one(contextOf(i));
      const used = process.cpuUsage(cpu);
      console.log(
        `${label}: ${(((used.user + used.system) * 1000) / (users * toggles.length)).toFixed(1)} ns per toggle (${toggles.length} compiled toggles, ${users} new users)`,
      );
    };
    for (let round = 0; round < 2; round++) {
      if (only !== 'toggle-engine')
        time('per toggle, SDK', (context) => {
          for (const t of toggles) fast.resolveFeature(t.feature as FeatureInterface, context);
        });
      time('per toggle, engine', (context) => {
        state.scope.begin(context);
        for (const t of toggles) t.engine?.evaluate(state.scope);
      });
    }
  };
  perToggle();
  if (only !== 'toggle-engine') {
    // interleaved slices, so a busy machine slows every configuration alike; the best slice is the cost
    const configs = [
      ...(only === 'engine' ? [] : [configured('sdk', true)]),
      ...(only === 'sdk' ? [] : [configured('engine', false)]),
      ...(only === 'memo' ? [configured('engine without memo', false, true)] : []),
    ];
    const slice = Math.max(20, Math.floor(REQUESTS / 20));
    for (let round = 0; round < 21; round++) for (const c of configs) c.run(slice);
    for (const c of configs) c.report();
  }
  await close();
}

void main();
