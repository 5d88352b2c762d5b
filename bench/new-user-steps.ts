/**
 * A new user's answer in process (no HTTP), step by step: the proxy's own code between the parsed
 * request and the body's bytes, timed with `process.hrtime.bigint()` around each step, for the
 * bench's generated definitions. Beside it the kept answer (a repeated context). Every step is
 * timed in the same loop, so a busy machine slows them alike; the median of 15 rounds is printed.
 * `node dist/bench/new-user-steps.js [flags...]`, default 200 and 2000.
 */
import type { Context } from 'unleash-client';
import { silentLogger } from '../src/common/logging/logger';
import { contextFromQuery } from '../src/proxy/context/build-context';
import { canonicalContext } from '../src/proxy/context/canonical-context';
import { derivedEtag } from '../src/proxy/engine/etag';
import { Evaluator } from '../src/proxy/engine/evaluator';
import { inProcessProxy } from './in-process';

const SIZES = process.argv.slice(2).map(Number);
const ROUNDS = 15;
const PER_ROUND = 200;
const LIMITS = { maxProperties: 100, maxValueLength: 1000, maxTotalLength: 100_000 };
const PROPERTIES =
  'appName=web&environment=production&plan=pro&version=2.3.1&region=eu&age=31&email=ada%40example.com';

const STEPS = [
  'query → context',
  'canonical context',
  'derived ETag (digest)',
  'prepare (enhance, determinism, canonical context, digest)',
  'answer (memo, templates, evaluation, join)',
  'kept answer (prepare + answer, repeated context)',
] as const;

async function measure(flags: number): Promise<void> {
  const { app, close } = await inProcessProxy(flags, 'new-user-steps');
  const evaluator = new Evaluator(app.features, silentLogger);
  for (const [label, query] of [
    ['with properties', `${PROPERTIES}&`],
    ['only userId+sessionId', ''],
  ] as const) {
    const times = new Map<string, number[]>(STEPS.map((s) => [s, []]));
    let user = 0;
    const round = (count: number, keep: boolean) => {
      const sum = new Map<string, bigint>(STEPS.map((s) => [s, 0n]));
      const add = (step: (typeof STEPS)[number], from: bigint) => {
        const now = process.hrtime.bigint();
        sum.set(step, (sum.get(step) ?? 0n) + now - from);
        return now;
      };
      for (let i = 0; i < count; i++) {
        user += 1;
        let at = process.hrtime.bigint();
        const context: Context = {
          ...contextFromQuery(`${query}userId=u-${user}&sessionId=s-${user}`, LIMITS),
          remoteAddress: '127.0.0.1',
        };
        at = add('query → context', at);
        const canonical = canonicalContext(context) ?? '';
        at = add('canonical context', at);
        derivedEtag('0123456789abcdef0123456789abcdef', 'enabled', canonical);
        at = add('derived ETag (digest)', at);
        const prepared = evaluator.prepare({ kind: 'enabled' }, context);
        at = add('prepare (enhance, determinism, canonical context, digest)', at);
        const reply = evaluator.answer(prepared, undefined);
        at = add('answer (memo, templates, evaluation, join)', at);
        if (!reply.notModified) reply.release?.();
        const kept = evaluator.answer(
          evaluator.prepare({ kind: 'enabled' }, { ...context, userId: 'kept', sessionId: 'kept' }),
          undefined,
        );
        if (!kept.notModified) kept.release?.();
        add('kept answer (prepare + answer, repeated context)', at);
      }
      if (keep) for (const [step, ns] of sum) times.get(step)?.push(Number(ns) / count / 1000);
    };
    round(PER_ROUND * 5, false); // warm-up: JIT, memo rows, templates
    for (let r = 0; r < ROUNDS; r++) round(PER_ROUND, true);
    for (const step of STEPS) {
      const sorted = [...(times.get(step) ?? [])].sort((a, b) => a - b);
      console.log(`| ${flags} | ${label} | ${step} | ${sorted[Math.floor(sorted.length / 2)].toFixed(2)} |`);
    }
  }
  await close();
}

async function main(): Promise<void> {
  console.log('| flags | query | step | µs per request (median of rounds) |');
  console.log('|---:|---|---|---:|');
  for (const flags of SIZES.length > 0 ? SIZES : [200, 2000]) await measure(flags);
}

void main();
