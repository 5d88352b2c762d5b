import { PIECES, pieceOf, templateBytes, type AnswerTemplate } from './answer-templates';
import type { AnswerPass } from './answer-pass';
import type { Outcome } from './outcomes';
import { joinEntries } from './toggle-json';
import { CONSTANT, REMEMBERED } from './toggle-steps';

const NOTHING = Buffer.alloc(0);

/**
 * The answer loop of an answer listing every toggle, from a template (`answer-templates.ts`): its
 * runs copied, the toggles between them evaluated (or remembered) as `answerLoop` does. The runs'
 * remembered outcomes are counted by the caller, once each.
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
  for (let j = 0; j < evaluated.length; j++) {
    const i = evaluated[j];
    // the run after this toggle: in its piece, or copied after its entry
    const next = runs[j + 1];
    if (shape !== undefined && pass.isDecided(i)) {
      pass.push(entries, pass.decidedEntry(toggles[i], shape));
    } else {
      const result = pass.at(i);
      if (typeof result !== 'number') pass.put(entries, i, -1, result, onlyEnabled);
      else {
        const piece = pieceOf(template, j, result);
        if (piece !== undefined) {
          pass.push(entries, piece);
          continue;
        }
        const before = entries.length;
        pass.put(entries, i, result, undefined, onlyEnabled);
        if (next.length > 0 && entries.length > before)
          revision.keepPiece(template, j, result, entries[before], next);
      }
    }
    if (next.length > 0) pass.push(entries, next);
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
    pieceIds: new Int32Array(PIECES * evaluated.length).fill(-1),
    pieces: new Array<Buffer | undefined>(PIECES * evaluated.length).fill(undefined),
    bytes: templateBytes(signature, runs, evaluated.length, usage.length),
  });
}
