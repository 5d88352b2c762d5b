/**
 * A new user's answer in process (no HTTP), step by step: the proxy's own code between the parsed
 * request and the body's bytes, timed with `process.hrtime.bigint()` around each step, for the
 * bench's generated definitions. Beside it the kept answer (a repeated context). Every step is
 * timed in the same loop, so a busy machine slows them alike; the median of 15 rounds is printed.
 *
 * Beside each step, in the same loop, its floor: the cheapest primitive doing the work the step
 * cannot skip, on the same input. The query: Node's own `querystring.parse` (no checks, no
 * limits). The canonical context: `JSON.stringify` of the same context (native, unsorted). The
 * digest: one SHA-256 of the same input. The answer: one MurmurHash3 (prepared prefix and key, as
 * the SDK's `normalizedValue` needs at least) per hash the engine computed for this request,
 * counted on one request, plus one copy of the answer's bytes.
 *
 * `STEPS_EVICT_KB=N` writes N KB of other memory between requests (not timed), as a server's
 * HTTP parsing, socket copies and other connections do between two answers: the steps and their
 * floors then run with the caches a server leaves them, not warmed by the request before.
 * `node dist/bench/new-user-steps.js [flags...]`, default 200 and 2000.
 */
import { hash } from 'node:crypto';
import { parse as parseQuery } from 'node:querystring';
import type { Request } from 'express';
import type { Context } from 'unleash-client';
import { silentLogger } from '../src/common/logging/logger';
import { completeContext, contextFromQuery } from '../src/proxy/context/build-context';
import { canonicalContext } from '../src/proxy/context/canonical-context';
import { derivedEtag } from '../src/proxy/engine/etag';
import { Evaluator } from '../src/proxy/engine/evaluator';
import * as murmur from '../src/proxy/upstream/murmur-hash';
import { NEW_USER_QUERY } from './flags';
import { inProcessProxy } from './in-process';

const SIZES = process.argv.slice(2).map(Number);
const ROUNDS = 15;
const PER_ROUND = 200;
const LIMITS = { maxProperties: 100, maxValueLength: 1000, maxTotalLength: 100_000 };
const PROPERTIES = NEW_USER_QUERY;

const STEPS = [
  'query → context (parse, limits, copy)',
  'canonical context',
  'derived ETag (digest)',
  'prepare (enhance, determinism, canonical context, digest)',
  'answer (memo, templates, evaluation, join)',
  'kept answer (prepare + answer, repeated context)',
] as const;
type Step = (typeof STEPS)[number];

/** Each step's floor (see the file's comment), printed beside it; none for the composite steps. */
const FLOORS: Partial<Record<Step, string>> = {
  'query → context (parse, limits, copy)': '`querystring.parse` of the query',
  'canonical context': '`JSON.stringify` of the context',
  'derived ETag (digest)': 'one SHA-256 of the same input',
  'answer (memo, templates, evaluation, join)': 'a MurmurHash3 per hash computed, one copy of the bytes',
};
type Floor = keyof typeof FLOORS;

const EVICT_BYTES = Number(process.env.STEPS_EVICT_KB ?? 0) * 1024;
const evictor = Buffer.alloc(Math.max(EVICT_BYTES, 1));

const REQUEST = { ip: '127.0.0.1', socket: { remoteAddress: '127.0.0.1' } } as unknown as Request;

/** How many rollout and variant hashes `run` makes the engine compute (the module's exports, wrapped once). */
function countHashes(run: () => void): number {
  const exports = murmur as {
    normalizedAfterState: typeof murmur.normalizedAfterState;
    normalizedAfter: typeof murmur.normalizedAfter;
  };
  const { normalizedAfterState, normalizedAfter } = exports;
  let count = 0;
  exports.normalizedAfterState = (...args) => (count++, normalizedAfterState(...args));
  exports.normalizedAfter = (...args) => (count++, normalizedAfter(...args));
  try {
    run();
  } finally {
    exports.normalizedAfterState = normalizedAfterState;
    exports.normalizedAfter = normalizedAfter;
  }
  return count;
}

async function measure(flags: number): Promise<void> {
  const { app, close } = await inProcessProxy(flags, 'new-user-steps');
  const evaluator = new Evaluator(app.features, silentLogger);
  const scratch = Buffer.alloc(4 << 20);
  for (const [label, query] of [
    ['with properties', `${PROPERTIES}&`],
    ['only userId+sessionId', ''],
  ] as const) {
    const modes = EVICT_BYTES > 0 ? [0, EVICT_BYTES] : [0];
    const times = modes.map(() => new Map<string, number[]>(STEPS.map((s) => [s, []])));
    const floors = modes.map(() => new Map<string, number[]>(STEPS.map((s) => [s, []])));
    let user = 0;
    const contextOf = (id: number): Context =>
      completeContext(
        contextFromQuery(`${query}userId=u-${id}&sessionId=s-${id}`, LIMITS),
        REQUEST,
        undefined,
      );
    const keptContext = contextOf(0);
    const answerOnce = (context: Context) => {
      const reply = evaluator.answer(evaluator.prepare({ kind: 'enabled' }, context), undefined);
      if (!reply.notModified) reply.release?.();
    };
    // warm-up (JIT, memo rows, templates), then the hashes one new user's answer computes
    for (let i = 0; i < PER_ROUND * 5; i++) answerOnce(contextOf(++user));
    let counted = 0;
    for (let i = 0; i < 20; i++) counted += countHashes(() => answerOnce(contextOf(++user)));
    const hashes = Math.round(counted / 20);
    const prefixes = Array.from({ length: hashes }, (_, k) => murmur.hashPrefix(`rollout-${k}:`, 0));
    const round = (count: number, mode: number) => {
      const sum = new Map<string, bigint>(STEPS.map((s) => [s, 0n]));
      const floorSum = new Map<string, bigint>(STEPS.map((s) => [s, 0n]));
      const add = (step: Step, from: bigint) => {
        const now = process.hrtime.bigint();
        sum.set(step, (sum.get(step) ?? 0n) + now - from);
        return now;
      };
      const addFloor = (step: Floor, from: bigint) => {
        const now = process.hrtime.bigint();
        floorSum.set(step, (floorSum.get(step) ?? 0n) + now - from);
        return now;
      };
      for (let i = 0; i < count; i++) {
        user += 1;
        const text = `${query}userId=u-${user}&sessionId=s-${user}`;
        if (modes[mode] > 0) evictor.fill(user & 0xff);
        let at = process.hrtime.bigint();
        const context = completeContext(contextFromQuery(text, LIMITS), REQUEST, undefined);
        at = add('query → context (parse, limits, copy)', at);
        parseQuery(text);
        at = addFloor('query → context (parse, limits, copy)', at);
        const canonical = canonicalContext(context) ?? '';
        at = add('canonical context', at);
        JSON.stringify(context);
        at = addFloor('canonical context', at);
        derivedEtag('0123456789abcdef0123456789abcdef', 'enabled', canonical);
        at = add('derived ETag (digest)', at);
        hash('sha256', `0123456789abcdef0123456789abcdef\u0000enabled\u0000${canonical}`, 'base64url');
        at = addFloor('derived ETag (digest)', at);
        const prepared = evaluator.prepare({ kind: 'enabled' }, context);
        at = add('prepare (enhance, determinism, canonical context, digest)', at);
        const reply = evaluator.answer(prepared, undefined);
        at = add('answer (memo, templates, evaluation, join)', at);
        const key = new murmur.PreparedKey(`u-${user}`);
        for (let k = 0; k < hashes; k++) murmur.normalizedAfter(prefixes[k], key, 100);
        if (!reply.notModified && Buffer.isBuffer(reply.body)) reply.body.copy(scratch);
        at = addFloor('answer (memo, templates, evaluation, join)', at);
        if (!reply.notModified) reply.release?.();
        at = process.hrtime.bigint();
        answerOnce(keptContext);
        add('kept answer (prepare + answer, repeated context)', at);
      }
      for (const [step, ns] of sum) times[mode].get(step)?.push(Number(ns) / count / 1000);
      for (const [step, ns] of floorSum) floors[mode].get(step)?.push(Number(ns) / count / 1000);
    };
    // the modes alternate round by round, so a busy machine slows them alike
    for (let r = 0; r < ROUNDS; r++) for (let mode = 0; mode < modes.length; mode++) round(PER_ROUND, mode);
    const median = (values: readonly number[]) =>
      [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    const cell = (values: readonly number[] | undefined) => median(values ?? []).toFixed(2);
    for (const step of STEPS) {
      const floor = FLOORS[step];
      const cells = modes.flatMap((_, m) => [
        cell(times[m].get(step)),
        floor === undefined ? '' : cell(floors[m].get(step)),
      ]);
      console.log(`| ${flags} | ${label} | ${step} | ${cells.join(' | ')} | ${floor ?? ''} |`);
    }
    console.log(
      `| ${flags} | ${label} | hashes computed per answer | ${hashes} |${' |'.repeat(2 * modes.length)}`,
    );
  }
  await close();
}

async function main(): Promise<void> {
  const evicted = EVICT_BYTES > 0 ? ` | after ${EVICT_BYTES / 1024} KB written, µs | its floor µs` : '';
  console.log(
    `| flags | query | step | µs per request (median of rounds) | floor µs${evicted} | the floor |`,
  );
  console.log(`|---:|---|---|---:|---:|${EVICT_BYTES > 0 ? '---:|---:|' : ''}---|`);
  for (const flags of SIZES.length > 0 ? SIZES : [200, 2000]) await measure(flags);
}

void main();
