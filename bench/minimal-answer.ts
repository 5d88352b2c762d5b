/**
 * Bench only, never part of the proxy: the `minimal` floor of `floors.ts`. A new user's answer
 * written by the least JavaScript that does the engine's work for the bench's definitions: the
 * toggles its answer template evaluates, each from one record of numbers made for this template
 * (its checks as indices into the request's check results, its prepared hash prefixes, its
 * percentage, its two variants' weights and outcome ids), in one loop with the MurmurHash3 written
 * into it; each outcome counted; the template's pieces chosen as the engine chooses them and
 * joined by the proxy's own join into the memory the answer is written in. What it leaves out is
 * everything general: the memo keys' and template's lookups (the template is the one the real
 * answers used), the per-toggle dispatch between the flat layout, the memo and the compiled
 * objects, and every kind of toggle the bench does not have (such a toggle is evaluated by the
 * engine). So the difference over HTTP between the real proxy and this one is what the engine's
 * generality costs above the same work written for these definitions alone.
 *
 * The first answers it writes are checked against the engine's: every toggle's outcome id equal
 * to the flat layout's for the same request, and the answer's bytes equal to the engine's answer
 * to the same request, or the process exits with a message.
 */
import type { Check } from '../src/proxy/engine/compiled/constraints';
import type { FlatToggles } from '../src/proxy/engine/compiled/flat';
import type { RequestScope } from '../src/proxy/engine/compiled/scope';
import type { AnswerPass } from '../src/proxy/engine/answer-pass';
import { NO_PLACE, PLACES, UNIT, type AnswerTemplate } from '../src/proxy/engine/answer-templates';
import { Evaluator } from '../src/proxy/engine/evaluator';
import { toggleListBody } from '../src/proxy/engine/toggle-json';
import type { PreparedKey } from '../src/proxy/upstream/murmur-hash';

/** The flat layout's arrays (`compiled/flat.ts`; its record's fields below mirror its own). */
interface FlatArrays {
  records: Int32Array;
  percentage: Float64Array;
  totalWeight: Float64Array;
  checkIds: Int32Array;
  checks: Check[];
  sharedChecks: (Check | undefined)[];
  fields: string[];
  seedFields: string[];
  weights: Float64Array;
  variantIds: Int32Array;
}
const F = {
  KIND: 0,
  CHECKS_FROM: 1,
  CHECKS_TO: 2,
  SHARED_ID: 3,
  STICKY: 4,
  FIELD_INDEX: 5,
  PREFIX: 6,
  CHOICE_FROM: 10,
  CHOICE_COUNT: 11,
  SEED_FIELD: 12,
  SEED_INDEX: 13,
  CHOICE_PREFIX: 14,
  OFF_ID: 18,
  ON_ID: 19,
  STRIDE: 20,
} as const;
const FLAT_ON = 1;
const FLAT_CHECKED = 2;
const FLAT_ROLLOUT = 3;
const STICKY_FIELD = 2;
const NOT_FLAT = -1;

/** This floor's record per evaluated toggle, in template order. */
const KIND = 0;
const CHECK_A = 1;
const CHECK_B = 2;
const STICKY_REF = 3;
const PREFIX = 4;
const PERCENT = 8;
const SEED_REF = 9;
const CHOICE_PREFIX = 10;
const TOTAL = 14;
const W0 = 15;
const W1 = 16;
const V0 = 17;
const V1 = 18;
const OFF = 19;
const ON = 20;
const STRIDE = 24;
/** Kinds: the engine evaluates it; enabled; a rollout; each with or without a variant choice. */
const ENGINE = 0;
const ENABLED = 1;
const ROLLOUT = 2;
const CHOICE = 4;
/** A reference to the default sticky value or seed instead of a field's. */
const DEFAULT_KEY = -1;

function scramble(block: number): number {
  const k1 = Math.imul(block, 0xcc9e2d51);
  return Math.imul((k1 << 15) | (k1 >>> 17), 0x1b873593);
}

/**
 * `normalizer`'s share of MurmurHash3 of the prefix kept at `records[from ..]` (h1, tail, its
 * length, the prefix's length) followed by a prepared key, from 1 to `normalizer`: what the SDK's
 * `normalizedValue` answers (`murmur-hash.ts`'s `normalizedAfterState`, written out here).
 */
function normalizedAt(records: Int32Array, from: number, key: PreparedKey, normalizer: number): number {
  const tailLength = records[from + 2];
  const tail = records[from + 1];
  const length = records[from + 3];
  if ((key.ready & (1 << tailLength)) === 0) key.align(tailLength);
  const parts = key.parts;
  const at = 5 * tailLength;
  let h = records[from];
  if (tailLength > 0) {
    const block = tail | (parts[at] << (8 * tailLength));
    if (tailLength + parts[at + 1] === 4) {
      const m = h ^ scramble(block);
      h = (Math.imul((m << 13) | (m >>> 19), 5) + 0xe6546b64) | 0;
    } else h ^= scramble(block);
  }
  const blocks = key.blocks;
  const start = key.stride * tailLength;
  const end = start + parts[at + 4];
  for (let j = start; j < end; j++) {
    const m = h ^ blocks[j];
    h = (Math.imul((m << 13) | (m >>> 19), 5) + 0xe6546b64) | 0;
  }
  if (parts[at + 3] > 0) h ^= parts[at + 2];
  h ^= length + key.key.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  // h as unsigned is 2 * (h >>> 1) + (h & 1): the remainder in 32-bit integers
  return ((((h >>> 1) % normalizer) * 2 + (h & 1)) % normalizer) + 1;
}

/** The template's toggles as this floor's records, with the checks and fields they read. */
interface Layout {
  readonly template: AnswerTemplate;
  readonly records: Int32Array;
  readonly checkIds: number[];
  readonly checks: Check[];
  readonly fields: { readonly index: number; readonly field: string }[];
  /** Toggles the engine evaluates (a kind this floor does not write). */
  readonly byEngine: number;
}

function layoutOf(flat: FlatToggles, template: AnswerTemplate): Layout {
  const arrays = flat as unknown as FlatArrays;
  const r = arrays.records;
  const evaluated = template.evaluated;
  const records = new Int32Array(STRIDE * evaluated.length);
  const checkIds: number[] = [];
  const checks: Check[] = [];
  const fields: { index: number; field: string }[] = [];
  const checkRef = (id: number, check: Check): number => {
    let at = checkIds.indexOf(id);
    if (at < 0) {
      at = checkIds.push(id) - 1;
      checks.push(check);
    }
    return at;
  };
  const fieldRef = (index: number, field: string): number => {
    let at = fields.findIndex((f) => f.index === index && f.field === field);
    if (at < 0) at = fields.push({ index, field }) - 1;
    return at;
  };
  let byEngine = 0;
  for (let j = 0; j < evaluated.length; j++) {
    const i = evaluated[j];
    const at = F.STRIDE * i;
    const out = STRIDE * j;
    const flatKind = r[at + F.KIND];
    const checkCount = r[at + F.CHECKS_TO] - r[at + F.CHECKS_FROM];
    const choiceCount = r[at + F.CHOICE_FROM] < 0 ? 0 : r[at + F.CHOICE_COUNT];
    const pct = arrays.percentage[i];
    const total = arrays.totalWeight[i];
    const from = r[at + F.CHOICE_FROM];
    const weights = choiceCount === 0 ? [] : [arrays.weights[from], arrays.weights[from + 1]];
    if (
      (flatKind !== FLAT_ON && flatKind !== FLAT_CHECKED && flatKind !== FLAT_ROLLOUT) ||
      checkCount + (flatKind === FLAT_CHECKED ? 1 : 0) > 2 ||
      (choiceCount !== 0 && choiceCount !== 2) ||
      !weights.every(Number.isInteger) ||
      !Number.isInteger(total) ||
      (choiceCount > 0 && !(total > 0 && total <= 0x40000000)) ||
      (flatKind === FLAT_ROLLOUT && r[at + F.PREFIX + 3] === 0)
    ) {
      records[out + KIND] = ENGINE;
      byEngine++;
      continue;
    }
    const refs: number[] = [];
    for (let c = r[at + F.CHECKS_FROM]; c < r[at + F.CHECKS_TO]; c++)
      refs.push(checkRef(arrays.checkIds[c], arrays.checks[c]));
    if (flatKind === FLAT_CHECKED) refs.push(checkRef(r[at + F.SHARED_ID], arrays.sharedChecks[i] as Check));
    records[out + CHECK_A] = refs[0] ?? -1;
    records[out + CHECK_B] = refs[1] ?? -1;
    let kind = flatKind === FLAT_ROLLOUT ? ROLLOUT : ENABLED;
    if (flatKind === FLAT_ROLLOUT) {
      records[out + STICKY_REF] =
        r[at + F.STICKY] === STICKY_FIELD ? fieldRef(r[at + F.FIELD_INDEX], arrays.fields[i]) : DEFAULT_KEY;
      records.set(
        [r[at + F.PREFIX], r[at + F.PREFIX + 1], r[at + F.PREFIX + 2], r[at + F.PREFIX + 3] - 1],
        out + PREFIX,
      );
      // a hash from 1 to 100 is at most the percentage when it is at most its integer part
      records[out + PERCENT] = Number.isNaN(pct) ? -1 : Math.min(1000, Math.floor(pct));
    }
    if (choiceCount === 2) {
      kind |= CHOICE;
      records[out + SEED_REF] =
        r[at + F.SEED_FIELD] === 1 ? fieldRef(r[at + F.SEED_INDEX], arrays.seedFields[i]) : DEFAULT_KEY;
      records.set(r.subarray(at + F.CHOICE_PREFIX, at + F.CHOICE_PREFIX + 4), out + CHOICE_PREFIX);
      records[out + TOTAL] = total;
      records[out + W0] = weights[0];
      records[out + W1] = weights[1];
      records[out + V0] = arrays.variantIds[from];
      records[out + V1] = arrays.variantIds[from + 1];
    }
    records[out + KIND] = kind;
    records[out + OFF] = r[at + F.OFF_ID];
    records[out + ON] = r[at + F.ON_ID];
  }
  return { template, records, checkIds, checks, fields, byEngine };
}

/** Every evaluated toggle's outcome id for the scope's request, into `ids` (`NOT_FLAT`: the engine's). */
function outcomes(
  layout: Layout,
  scope: RequestScope,
  ok: Uint8Array,
  keys: (PreparedKey | null)[],
  ids: Int32Array,
): void {
  const { records, checkIds, checks, fields } = layout;
  for (let c = 0; c < checkIds.length; c++) ok[c] = scope.shared(checkIds[c], checks[c]) ? 1 : 0;
  for (let f = 0; f < fields.length; f++) keys[f] = scope.fieldKey(fields[f].index, fields[f].field);
  const sticky = scope.stickyKey();
  const seed = scope.seedKey();
  const n = ids.length;
  for (let j = 0; j < n; j++) {
    const at = STRIDE * j;
    const kind = records[at + KIND];
    if (kind === ENGINE) {
      ids[j] = NOT_FLAT;
      continue;
    }
    const a = records[at + CHECK_A];
    const b = records[at + CHECK_B];
    if ((a >= 0 && ok[a] === 0) || (b >= 0 && ok[b] === 0)) {
      ids[j] = records[at + OFF];
      continue;
    }
    if ((kind & ROLLOUT) !== 0) {
      const ref = records[at + STICKY_REF];
      const key = ref === DEFAULT_KEY ? sticky : keys[ref];
      if (key === null) {
        ids[j] = ref === DEFAULT_KEY ? NOT_FLAT : records[at + OFF];
        continue;
      }
      if (normalizedAt(records, at + PREFIX, key, 100) > records[at + PERCENT]) {
        ids[j] = records[at + OFF];
        continue;
      }
    }
    if ((kind & CHOICE) === 0) {
      ids[j] = records[at + ON];
      continue;
    }
    const ref = records[at + SEED_REF];
    const key = ref === DEFAULT_KEY ? seed : keys[ref];
    if (key === null) {
      ids[j] = NOT_FLAT;
      continue;
    }
    const target = normalizedAt(records, at + CHOICE_PREFIX, key, records[at + TOTAL]);
    const w0 = records[at + W0];
    const w1 = records[at + W1];
    ids[j] =
      w0 !== 0 && w0 >= target
        ? records[at + V0]
        : w1 !== 0 && w0 + w1 >= target
          ? records[at + V1]
          : records[at + ON];
  }
}

interface Memory {
  memory: { bodies: { take(length: number): { body: Buffer; release: (() => void) | undefined } } };
}
interface Evaluated {
  body: Buffer;
  usage: unknown;
  release: (() => void) | undefined;
}
type Evaluate = (this: unknown, pass: AnswerPass, selection: unknown, order: unknown) => Evaluated;

/** Answers checked against the engine's (each toggle, then the bytes) before the floor runs unchecked. */
const CHECKED_ANSWERS = 500;

/**
 * After `realAnswers` real answers, every new user's `/proxy` answer (listing enabled toggles) is
 * written by this floor from the template the last real answer used.
 */
export function minimalAnswer(realAnswers: number): void {
  const prototype = Evaluator.prototype as unknown as { evaluate: Evaluate };
  const real = prototype.evaluate;
  let answers = 0;
  let layout: Layout | undefined;
  let ids = new Int32Array(0);
  let ok = new Uint8Array(0);
  let keys: (PreparedKey | null)[] = [];
  const entries: Buffer[] = [];
  let checked = 0;
  prototype.evaluate = function (this: unknown, pass, selection, order) {
    if (pass.collect || layout === undefined) {
      const result = real.call(this, pass, selection, order);
      if (!pass.collect && ++answers === realAnswers) {
        const templates = pass.revision.templates as unknown as { lastSignature: string | undefined };
        const template =
          templates.lastSignature === undefined
            ? undefined
            : pass.revision.templates.get(templates.lastSignature);
        if (template === undefined)
          throw new Error('minimal floor: no answer template after the real answers');
        layout = layoutOf(pass.revision.flat, template);
        ids = new Int32Array(template.evaluated.length);
        ok = new Uint8Array(layout.checkIds.length);
        keys = new Array<PreparedKey | null>(layout.fields.length).fill(null);
        process.stderr.write(
          `minimal floor: ${template.evaluated.length} toggles evaluated per answer, ${layout.byEngine} by the engine\n`,
        );
      }
      return result;
    }
    const { revision } = pass;
    const { template } = layout;
    const { flat, scope, places } = revision;
    const { table } = revision.plan;
    const usage = revision.usage;
    outcomes(layout, scope, ok, keys, ids);
    const evaluated = template.evaluated;
    if (checked < CHECKED_ANSWERS) {
      for (let j = 0; j < evaluated.length; j++) {
        const engine = flat.has(evaluated[j]) ? flat.outcome(evaluated[j], scope) : NOT_FLAT;
        if (ids[j] !== NOT_FLAT && engine !== NOT_FLAT && ids[j] !== engine) {
          process.stderr.write(
            `minimal floor: toggle ${evaluated[j]} is ${ids[j]}, the engine's ${engine}\n`,
          );
          process.exit(1);
        }
      }
    }
    // outcomes the floor does not write: the engine's, as its answer loop evaluates them (one
    // that is not interned is written from its own entry)
    let own: Map<number, Buffer> | undefined;
    for (let j = 0; j < evaluated.length; j++) {
      if (ids[j] === NOT_FLAT) {
        const result = pass.at(evaluated[j]);
        if (typeof result === 'number') ids[j] = result;
        else {
          ids[j] = -1;
          if (result.enabled) (own ??= new Map()).set(j, result.entry);
        }
      } else usage.countId(ids[j]);
    }
    usage.countAnswer(template.usage);
    usage.countAnswer(revision.constants);
    const { runs, pieces } = template;
    let bytes = 0;
    if (runs[0].length > 0) {
      entries.push(runs[0]);
      bytes += runs[0].length;
    }
    for (let j = 0, u = 0; j < evaluated.length; j += UNIT, u++) {
      const count = Math.min(UNIT, evaluated.length - j);
      let slot = 0;
      for (let t = 0; t < count && slot >= 0; t++) {
        const id = ids[j + t];
        const place = id < 0 ? NO_PLACE : places.of(evaluated[j + t], id);
        slot = place === NO_PLACE ? -1 : slot * PLACES + place;
      }
      const piece = slot < 0 ? undefined : pieces[PLACES ** UNIT * u + slot];
      if (piece !== undefined) {
        if (piece.length > 0) {
          entries.push(piece);
          bytes += piece.length;
        }
        continue;
      }
      for (let t = 0; t < count; t++) {
        const id = ids[j + t];
        const entry = id >= 0 ? (table.enabled[id] === 1 ? table.entries[id] : undefined) : own?.get(j + t);
        if (entry !== undefined) {
          entries.push(entry);
          bytes += entry.length;
        }
        const next = runs[j + t + 1];
        if (next.length > 0) {
          entries.push(next);
          bytes += next.length;
        }
      }
    }
    let release: (() => void) | undefined;
    const body = toggleListBody(entries, bytes, (length) => {
      const taken = (this as Memory).memory.bodies.take(length);
      release = taken.release;
      return taken.body;
    });
    entries.length = 0;
    if (checked < CHECKED_ANSWERS) {
      // the engine's answer for the same request, written after this one: the same bytes
      const engine = real.call(this, pass, selection, order);
      if (!engine.body.equals(body)) {
        process.stderr.write("minimal floor: an answer differs from the engine's\n");
        process.exit(1);
      }
      engine.release?.();
      if (++checked === CHECKED_ANSWERS)
        process.stderr.write(
          `minimal floor: ${CHECKED_ANSWERS} answers equal to the engine's, byte for byte\n`,
        );
    }
    return { body, usage: undefined, release };
  };
}
