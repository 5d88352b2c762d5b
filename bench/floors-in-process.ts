/**
 * A new user's answer in process (no HTTP) with steps at their floor (`floors.ts`), beside the
 * real engine: `node dist/bench/floors-in-process.js [flags] [rounds] [floors...]` (default 2000,
 * 5, and `minimal join answer`). Each round starts one process per kind in turn (the floors patch
 * the engine for their whole process), which answers 2,500 new users to warm up (the floors take
 * over after 1,000) and then times 4,000 more from the query string to the answer's bytes, hot and
 * then with 4 MB of other memory written before each (as a server's parsing and socket copies do
 * between two answers). Printed: each kind's median µs per new user over the rounds, both ways.
 */
import { execFileSync } from 'node:child_process';
import type { Request } from 'express';
import { silentLogger } from '../src/common/logging/logger';
import { completeContext, contextFromQuery } from '../src/proxy/context/build-context';
import { NEW_USER_QUERY } from './flags';
import { inProcessProxy } from './in-process';

const LIMITS = { maxProperties: 100, maxValueLength: 1000, maxTotalLength: 100_000 };
const REQUEST = { ip: '127.0.0.1', socket: { remoteAddress: '127.0.0.1' } } as unknown as Request;
const WARM_UP = 2_500;
const TIMED = 4_000;
const EVICT_BYTES = 4 << 20;

/** One kind's process: µs per new user, hot and with the caches lost, as one JSON line. */
async function measureOne(flags: number): Promise<void> {
  // loaded after BENCH_FLOORS is set (by the parent), so that the floors patch this engine
  await import('./floors');
  const { Evaluator } = await import('../src/proxy/engine/evaluator');
  const { app, close } = await inProcessProxy(flags, 'floors-in-process');
  const evaluator = new Evaluator(app.features, silentLogger);
  const evictor = Buffer.alloc(EVICT_BYTES);
  let user = 0;
  const answerOne = () => {
    user += 1;
    const query = `${NEW_USER_QUERY}&userId=u-${user}&sessionId=s-${user}`;
    const context = completeContext(contextFromQuery(query, LIMITS), REQUEST, undefined);
    const reply = evaluator.answer(evaluator.prepare({ kind: 'enabled' }, context), undefined);
    if (!reply.notModified) reply.release?.();
  };
  for (let i = 0; i < WARM_UP; i++) answerOne();
  const timed = (evict: boolean): number => {
    let ns = 0n;
    for (let i = 0; i < TIMED; i++) {
      if (evict) evictor.fill(i & 0xff);
      const from = process.hrtime.bigint();
      answerOne();
      ns += process.hrtime.bigint() - from;
    }
    return Number(ns) / TIMED / 1000;
  };
  const hot = timed(false);
  const cold = timed(true);
  process.stdout.write(`${JSON.stringify({ hot, cold })}\n`);
  await close();
}

function main(): void {
  const args = process.argv.slice(2);
  if (args[0] === '--one') {
    void measureOne(Number(args[1]));
    return;
  }
  const [flagsArg = '2000', roundsArg = '5', ...floorArgs] = args;
  const kinds = ['real', ...(floorArgs.length > 0 ? floorArgs : ['minimal', 'join', 'answer'])];
  const results = new Map<string, { hot: number[]; cold: number[] }>(
    kinds.map((k) => [k, { hot: [], cold: [] }]),
  );
  for (let round = 0; round < Number(roundsArg); round++) {
    for (const kind of kinds) {
      const out = execFileSync(process.execPath, [__filename, '--one', flagsArg], {
        encoding: 'utf8',
        // the floors' own messages (checks passed) are not part of the table
        stdio: ['ignore', 'pipe', 'ignore'],
        env: { ...process.env, BENCH_FLOORS: kind === 'real' ? '' : kind },
      });
      const { hot, cold } = JSON.parse(out.trim().split('\n').pop() ?? '{}') as { hot: number; cold: number };
      results.get(kind)?.hot.push(hot);
      results.get(kind)?.cold.push(cold);
    }
  }
  const median = (values: readonly number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  console.log(`| ${flagsArg} flags, a new user in process | µs hot | µs after 4 MB written |`);
  console.log('|---|---:|---:|');
  for (const [kind, { hot, cold }] of results)
    console.log(`| ${kind} | ${median(hot).toFixed(1)} | ${median(cold).toFixed(1)} |`);
}

main();
