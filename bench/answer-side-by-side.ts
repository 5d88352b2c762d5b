/**
 * A new user's answer in process (no HTTP) for two builds side by side: the other build's and
 * this one's `Evaluator`, each over its own in-process proxy on the bench's generated definitions,
 * in one process, rounds alternating between them (the order swapped every round), so a busy host
 * slows both alike. An engine change of a few percent, below what the HTTP harness
 * (`interleaved.ts`) resolves on a shared host, reads here as it is.
 *
 * `node dist/bench/answer-side-by-side.js <other worktree, built> [flags] [rounds] [ids]`: per round
 * and build, 300 new users' `prepare` + `answer` (with the bench's properties, or with `ids` only
 * userId and sessionId), each followed by one kept answer (a repeated context, timed apart), then
 * 100 new users after 4 MB of other memory was written before each (caches lost, as between two
 * requests of a server). Printed: each build's median µs and the median of the rounds' ratios
 * (this build / the other).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Request } from 'express';
import type { Context } from 'unleash-client';
import { NEW_USER_QUERY } from './flags';

const [other, flagsArg = '200', roundsArg = '16', mode] = process.argv.slice(2);
const FLAGS = Number(flagsArg);
const ROUNDS = Number(roundsArg);
const LIMITS = { maxProperties: 100, maxValueLength: 1000, maxTotalLength: 100_000 };
const PROPERTIES = mode === 'ids' ? '' : `${NEW_USER_QUERY}&`;
const REQUEST = { ip: '127.0.0.1', socket: { remoteAddress: '127.0.0.1' } } as unknown as Request;
const evictor = Buffer.alloc(4 << 20);

/** The parts of a build this measurement uses, as its compiled modules export them. */
interface BuildModules {
  logger: typeof import('../src/common/logging/logger');
  context: typeof import('../src/proxy/context/build-context');
  evaluator: typeof import('../src/proxy/engine/evaluator');
  inProcess: typeof import('./in-process');
}

interface Side {
  readonly name: string;
  /** µs per new user, per kept answer, per new user with the caches lost; one value per round. */
  readonly times: [number[], number[], number[]];
  run(count: number, evict: boolean): [number, number];
  close(): Promise<void>;
}

const loadModule = createRequire(__filename);

/** A build's compiled module (`dist/...`), loaded from its own tree. */
function load<T>(dist: string, file: string): T {
  return loadModule(path.join(dist, file)) as T;
}

async function side(root: string): Promise<Side> {
  const dist = path.join(root, 'dist');
  const modules: BuildModules = {
    logger: load(dist, 'src/common/logging/logger'),
    context: load(dist, 'src/proxy/context/build-context'),
    evaluator: load(dist, 'src/proxy/engine/evaluator'),
    inProcess: load(dist, 'bench/in-process'),
  };
  const { app, close } = await modules.inProcess.inProcessProxy(FLAGS, 'side-by-side');
  const evaluator = new modules.evaluator.Evaluator(app.features, modules.logger.silentLogger);
  const contextOf = (id: number): Context =>
    modules.context.completeContext(
      modules.context.contextFromQuery(`${PROPERTIES}userId=u-${id}&sessionId=s-${id}`, LIMITS),
      REQUEST,
      undefined,
    );
  const answer = (context: Context) => {
    const reply = evaluator.answer(evaluator.prepare({ kind: 'enabled' }, context), undefined);
    if (!reply.notModified) reply.release?.();
  };
  let user = 0;
  // warm-up: compilation, memo rows, templates
  for (let i = 0; i < 2000; i++) answer(contextOf(++user));
  const kept = contextOf(0);
  return {
    name: root,
    times: [[], [], []],
    run(count, evict) {
      const contexts = Array.from({ length: count }, () => contextOf(++user));
      let fresh = 0n;
      let again = 0n;
      for (let i = 0; i < count; i++) {
        if (evict) evictor.fill(i & 0xff);
        const start = process.hrtime.bigint();
        answer(contexts[i]);
        const middle = process.hrtime.bigint();
        answer(kept);
        again += process.hrtime.bigint() - middle;
        fresh += middle - start;
      }
      return [Number(fresh) / count / 1000, Number(again) / count / 1000];
    },
    close,
  };
}

const median = (values: readonly number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main(): Promise<void> {
  if (other === undefined)
    throw new Error('usage: answer-side-by-side.js <other worktree> [flags] [rounds] [ids]');
  const sides = [await side(path.resolve(other)), await side(path.resolve(__dirname, '..', '..'))];
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of round % 2 === 0 ? sides : [...sides].reverse()) {
      const [fresh, kept] = s.run(300, false);
      const [cold] = s.run(100, true);
      s.times[0].push(fresh);
      s.times[1].push(kept);
      s.times[2].push(cold);
    }
  }
  const [base, current] = sides;
  const rows = ['a new user', 'the kept answer', 'a new user, caches lost'];
  rows.forEach((row, k) => {
    const ratios = current.times[k].map((us, i) => us / base.times[k][i]);
    console.log(
      `${FLAGS} flags, ${mode === 'ids' ? 'ids only' : 'with properties'}, ${row}: ` +
        `${base.name} ${median(base.times[k]).toFixed(2)} µs, this build ${median(current.times[k]).toFixed(2)} µs; ` +
        `ratio ${median(ratios).toFixed(3)}`,
    );
  });
  for (const s of sides) await s.close();
}

void main();
