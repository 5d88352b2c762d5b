import {
  NO_PLACE,
  PLACES,
  templateBytes,
  UNIT,
  UNIT_PIECES,
  unitsOf,
  type AnswerTemplate,
} from './answer-templates';
import type { AnswerPass } from './answer-pass';
import type { Outcome } from './outcomes';
import { joinEntries } from './toggle-json';
import { CONSTANT, REMEMBERED } from './toggle-steps';

const NOTHING = Buffer.alloc(0);

/**
 * The answer loop of an answer listing every toggle, from a template (`answer-templates.ts`): its
 * runs copied, the toggles between them evaluated (or remembered) as `answerLoop` does, in units of
 * `UNIT` toggles: a unit whose outcomes were met before is written as its one piece, the run after
 * each of its toggles included. The runs' remembered outcomes are counted by the caller, once each.
 */
export function fromTemplate(
  entries: Buffer[],
  pass: AnswerPass,
  template: AnswerTemplate,
  onlyEnabled: boolean,
): void {
  const { revision, shape } = pass;
  const { toggles } = revision.plan;
  const { evaluated, runs } = template;
  // (one by one: a spread of thousands of outcomes as arguments could overflow the stack)
  if (pass.collect) for (const outcome of template.usage) pass.counted.push(outcome);
  if (runs[0].length > 0) pass.push(entries, runs[0]);
  const { places } = revision;
  const { pieces } = template;
  // a unit's outcome ids; -1 for an outcome not interned or an entry its shape decided, kept in `others`
  const ids = new Int32Array(UNIT);
  const others = new Array<Outcome | Buffer | undefined>(UNIT).fill(undefined);
  for (let j = 0, u = 0; j < evaluated.length; j += UNIT, u++) {
    const count = Math.min(UNIT, evaluated.length - j);
    // every toggle of the unit evaluated in answer order, then written; `slot` names its piece
    let slot = 0;
    for (let t = 0; t < count; t++) {
      const i = evaluated[j + t];
      if (shape !== undefined && pass.isDecided(i)) {
        ids[t] = -1;
        others[t] = pass.decidedEntry(toggles[i], shape);
        slot = -1;
        continue;
      }
      const result = pass.at(i);
      if (typeof result === 'number') {
        ids[t] = result;
        if (slot >= 0) {
          const place = places.of(i, result);
          slot = place === NO_PLACE ? -1 : slot * PLACES + place;
        }
      } else {
        ids[t] = -1;
        others[t] = result;
        slot = -1;
      }
    }
    if (slot >= 0) {
      slot += UNIT_PIECES * u;
      const piece = pieces[slot];
      if (piece !== undefined) {
        if (piece.length > 0) pass.push(entries, piece);
        continue;
      }
    }
    const before = entries.length;
    for (let t = 0; t < count; t++) {
      const i = evaluated[j + t];
      const id = ids[t];
      if (id >= 0) pass.put(entries, i, id, undefined, onlyEnabled);
      else {
        const other = others[t];
        others[t] = undefined;
        if (other instanceof Uint8Array) pass.push(entries, other);
        else pass.put(entries, i, -1, other, onlyEnabled);
      }
      const next = runs[j + t + 1];
      if (next.length > 0) pass.push(entries, next);
    }
    if (slot >= 0) revision.keepPiece(template, slot, entries.slice(before));
  }
}

/**
 * Makes and keeps the template of a signature from what the memo holds now: constant toggles and
 * remembered ones whose row for the context's key has their outcome go into runs (with a shape,
 * its entries; a toggle the shape evaluates with its deciding strategy is evaluated per request);
 * every other toggle is evaluated per request. Kept within the memo budget (nothing kept when it
 * does not fit).
 */
export function makeTemplate(
  pass: AnswerPass,
  signature: string,
  indices: ArrayLike<number>,
  onlyEnabled: boolean,
): void {
  const { revision, keys, shape, shaped } = pass;
  if (revision.retired) return;
  const { toggles, steps, table } = revision.plan;
  const evaluated: number[] = [];
  const runs: Buffer[] = [];
  const usage: Outcome[] = [];
  let run: Buffer[] = [];
  for (let k = 0; k < indices.length; k++) {
    const i = indices[k];
    let outcome: Outcome | undefined;
    const kind = steps.kind[i];
    if (kind === CONSTANT) outcome = toggles[i].constant;
    else if (kind === REMEMBERED && shaped?.decided[i] !== 1) {
      const group = steps.group[i];
      const key = keys.ofGroup(group);
      const id = key === undefined ? -1 : (keys.currentRow(group, key)?.[steps.slot[i]] ?? -1);
      if (id >= 0) {
        outcome = table.list[id];
        usage.push(outcome);
      }
    }
    if (outcome === undefined) {
      evaluated.push(i);
      runs.push(joinEntries(NOTHING, run, NOTHING));
      run = [];
    } else if (shape !== undefined) {
      run.push(
        (outcome.id >= 0 ? shaped?.byId[outcome.id] : undefined) ??
          shape.entry(toggles[i], outcome, undefined),
      );
    } else if (!onlyEnabled || outcome.enabled) run.push(outcome.entry);
  }
  runs.push(joinEntries(NOTHING, run, NOTHING));
  revision.keepTemplate({
    signature,
    evaluated: Int32Array.from(evaluated),
    runs,
    usage,
    pieces: new Array<Buffer | undefined>(UNIT_PIECES * unitsOf(evaluated.length)).fill(undefined),
    bytes: templateBytes(signature, runs, evaluated.length, usage.length),
  });
}
