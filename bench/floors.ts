/**
 * Bench only, never part of the proxy: loaded into a proxy process with `--require` by
 * `wrk-cells.ts --floors`, it replaces steps of a new user's request by their floor, at most the
 * cheapest primitive doing the work the step cannot skip (a lower bound), so that the
 * difference over HTTP between the real proxy and one with a step at its floor is what that step
 * costs above its floor, its effect on Node's own work for the request (caches, allocation, GC)
 * included. `BENCH_FLOORS` lists the steps, comma-separated:
 *
 * - `query`: the query string read by Node's `querystring.parse`, its root fields kept at the root
 *   and the others moved into `properties` (no limits, no checks for a parameter given twice);
 * - `digest`: no canonical context (the userId stands for it), the derived ETag one SHA-256 of it;
 * - `answer`: a new user's evaluation, templates and join as one MurmurHash3 (prepared prefix and
 *   key) per hash the engine computed for a real answer, plus one copy of a real answer's bytes
 *   into the memory the answer is written in;
 * - `join`: the evaluation and the template loop at their floor (one MurmurHash3 per hash, as
 *   `answer`), the answer's bytes joined as the proxy joins them: the lists of entries (the
 *   template's pieces and runs, the same buffers) of the last 64 real answers, one per request in
 *   turn, through the proxy's own join into the memory the answer is written in;
 * - `minimal`: not a floor of one step but the answer written by the least code doing the engine's
 *   work for the bench's definitions (`minimal-answer.ts`): what the engine's generality costs;
 * - `engine`: the whole engine (`prepare` and `answer`: the context enhanced, determinism, the
 *   canonical context and digest, memo keys, templates, evaluation, the join, the answer cache's
 *   sighting) as one SHA-256 of the userId and one copy of a real answer into reused memory: what is
 *   left is the request's path outside the engine (front, key, query, context, write).
 *
 * Answers made with `digest` or `answer` at their floors are not the proxy's answers (the same
 * bytes for every user, ETags of another form): this measures cost, nothing else.
 */
import { hash } from 'node:crypto';
import { parse } from 'node:querystring';
import type { Context } from 'unleash-client';
import * as buildContext from '../src/proxy/context/build-context';
import * as canonical from '../src/proxy/context/canonical-context';
import { BodyBuffers } from '../src/proxy/engine/body-buffers';
import { ROOT_FIELDS } from '../src/proxy/context/query';
import { Evaluator, type Prepared, type Reply, type Selection } from '../src/proxy/engine/evaluator';
import { EvaluationPipeline } from '../src/proxy/evaluation/pipeline';
import * as etag from '../src/proxy/engine/etag';
import * as toggleJson from '../src/proxy/engine/toggle-json';
import * as murmur from '../src/proxy/upstream/murmur-hash';
import { minimalAnswer } from './minimal-answer';

const FLOORS = new Set((process.env.BENCH_FLOORS ?? '').split(',').filter((s) => s !== ''));
const ROOT = new Set<string>(ROOT_FIELDS);
/** Real answers made before a step is at its floor (warm-up, templates, and what the floor copies). */
const REAL_ANSWERS = 1000;

/** What `Evaluator`'s private `evaluate` takes and gives, as far as the floor reads it. */
interface Evaluated {
  body: Buffer;
  usage: unknown;
  release: (() => void) | undefined;
}
type Evaluate = (
  this: unknown,
  pass: { collect: boolean; enhanced: Context },
  selection: unknown,
  order: unknown,
) => Evaluated;
interface Memory {
  memory: { bodies: { take(length: number): { body: Buffer; release: (() => void) | undefined } } };
}

function queryAtFloor(): void {
  Object.assign(buildContext, {
    contextFromQuery(query: string): Context {
      const parsed = parse(query);
      const context: Record<string, unknown> = {};
      let properties: Record<string, string> | undefined;
      for (const name of Object.keys(parsed)) {
        const value = parsed[name];
        const text = Array.isArray(value) ? value[0] : value;
        if (text === undefined || text === '') continue;
        if (ROOT.has(name)) context[name] = text;
        else (properties ??= {})[name] = text;
      }
      if (properties !== undefined) context.properties = properties;
      return context as Context;
    },
  });
}

function digestAtFloor(): void {
  Object.assign(canonical, { canonicalContext: (context: Context) => context.userId ?? '' });
  Object.assign(etag, {
    derivedEtag: (_definitions: string, _selection: string, context: string) =>
      `W/"d-${hash('sha256', context, 'base64url')}"`,
  });
}

/**
 * The answer's hashes at their floor: the rollout and variant hashes the engine computes, counted
 * over the real answers (`count` until `stop`), then one MurmurHash3 each (prepared prefix and key)
 * per new user.
 */
class HashFloor {
  private readonly exports = murmur as {
    normalizedAfterState: typeof murmur.normalizedAfterState;
    normalizedAfter: typeof murmur.normalizedAfter;
  };
  private readonly originals = { ...this.exports };
  private counted = 0;
  private prefixes: murmur.HashPrefix[] = [];
  private readonly key = new murmur.PreparedKey('');

  /** Counts every hash the engine computes from now on. */
  count(): void {
    const { normalizedAfterState, normalizedAfter } = this.originals;
    this.exports.normalizedAfterState = (...args) => (this.counted++, normalizedAfterState(...args));
    this.exports.normalizedAfter = (...args) => (this.counted++, normalizedAfter(...args));
  }

  /** Stops counting: a new user's floor is the hashes of an average one of these `answers`. */
  stop(answers: number): void {
    Object.assign(this.exports, this.originals);
    const hashes = Math.round(this.counted / answers);
    this.prefixes = Array.from({ length: hashes }, (_, k) => murmur.hashPrefix(`rollout-${k}:`, 0));
  }

  /** One new user's hashes, their results mixed (to be used, so that no compiler drops them). */
  run(userId: unknown): number {
    this.key.reset(String(userId ?? ''));
    let mixed = 0;
    for (const prefix of this.prefixes) mixed ^= this.originals.normalizedAfter(prefix, this.key, 100);
    return mixed;
  }
}

/** Real answers first (their hashes counted, their bytes kept), then the floor for every new user. */
function answerAtFloor(): void {
  const prototype = Evaluator.prototype as unknown as { evaluate: Evaluate };
  const real = prototype.evaluate;
  const hashes = new HashFloor();
  hashes.count();
  let answers = 0;
  let body: Buffer | undefined;
  prototype.evaluate = function (this: unknown, pass, selection, order) {
    if (pass.collect) return real.call(this, pass, selection, order);
    if (body === undefined) {
      const result = real.call(this, pass, selection, order);
      if (++answers === REAL_ANSWERS) {
        hashes.stop(REAL_ANSWERS);
        body = Buffer.from(result.body);
      }
      return result;
    }
    const mixed = hashes.run(pass.enhanced.userId);
    const taken = (this as Memory).memory.bodies.take(body.length);
    body.copy(taken.body);
    taken.body[0] = body[0] | (mixed & 0);
    return { body: taken.body, usage: undefined, release: taken.release };
  };
}

/** Lists of entries `join` keeps from the last real answers, joined in turn. */
const KEPT_LISTS = 64;

/**
 * Real answers first (their hashes counted, the last ones' lists of entries kept), then for every
 * new user the hashes and the proxy's join of one kept list.
 */
function joinAtFloor(): void {
  const prototype = Evaluator.prototype as unknown as { evaluate: Evaluate };
  const real = prototype.evaluate;
  const module = toggleJson as { toggleListBody: typeof toggleJson.toggleListBody };
  const join = module.toggleListBody;
  const hashes = new HashFloor();
  hashes.count();
  let answers = 0;
  let ready = false;
  const lists: { entries: Uint8Array[]; bytes: number }[] = [];
  // a real answer's entries, kept for the last answers before the floor takes over
  module.toggleListBody = (entries, bytes, allocate) => {
    if (!ready && answers >= REAL_ANSWERS - KEPT_LISTS)
      lists.push({ entries: entries.slice(), bytes: bytes ?? 0 });
    return join(entries, bytes, allocate);
  };
  let turn = 0;
  prototype.evaluate = function (this: unknown, pass, selection, order) {
    if (pass.collect) return real.call(this, pass, selection, order);
    if (!ready) {
      const result = real.call(this, pass, selection, order);
      if (++answers === REAL_ANSWERS) {
        ready = true;
        module.toggleListBody = join;
        hashes.stop(REAL_ANSWERS);
      }
      return result;
    }
    const mixed = hashes.run(pass.enhanced.userId);
    const list = lists[turn++ % lists.length];
    let release: (() => void) | undefined;
    const body = join(list.entries, list.bytes, (length) => {
      const taken = (this as Memory).memory.bodies.take(length);
      release = taken.release;
      return taken.body;
    });
    body[0] |= mixed & 0;
    return { body, usage: undefined, release };
  };
}

/** Real answers first (their bytes kept), then a digest and a copy for every new user. */
function engineAtFloor(): void {
  const prototype = EvaluationPipeline.prototype;
  const { prepare, answer } = prototype;
  const FLOOR = -2;
  let answers = 0;
  let body: Buffer | undefined;
  // the answer's memory reused as the proxy's own is (a fresh 148 KB per request is page faults)
  const bodies = new BodyBuffers();
  prototype.prepare = function (selection: Selection, context: Context): Prepared {
    if (body === undefined) return prepare.call(this, selection, context);
    const validator = `W/"d-${hash('sha256', String(context.userId ?? ''), 'base64url')}"`;
    return { revision: FLOOR, selection, context, enhanced: context, window: undefined, etag: validator };
  };
  prototype.answer = function (req, prepared): Reply {
    if (prepared.revision !== FLOOR || body === undefined) {
      const reply = answer.call(this, req, prepared);
      if (!reply.notModified && ++answers === REAL_ANSWERS) body = Buffer.from(reply.body);
      return reply;
    }
    const taken = bodies.take(body.length);
    body.copy(taken.body);
    return { notModified: false, body: taken.body, etag: prepared.etag ?? '', release: taken.release };
  };
}

if (FLOORS.has('query')) queryAtFloor();
if (FLOORS.has('engine')) engineAtFloor();
if (FLOORS.has('digest')) digestAtFloor();
if (FLOORS.has('answer')) answerAtFloor();
if (FLOORS.has('join')) joinAtFloor();
if (FLOORS.has('minimal')) minimalAnswer(REAL_ANSWERS);
