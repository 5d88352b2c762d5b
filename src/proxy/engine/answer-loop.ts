import type { AnswerPass } from './answer-pass';
import { QUARANTINED, type Outcome } from './outcomes';
import type { Selection } from './requests';
import { fromTemplate, makeTemplate } from './template-pass';
import { disabledToggle, toggleEntry } from './toggle-json';
import { CONSTANT, REMEMBERED } from './toggle-steps';

/**
 * The toggles of an answer in its order, as indices into `Plan.toggles`; a name the definitions
 * lack is a negative index, -1 for `unknown[0]`, -2 for `unknown[1]`, …
 */
export interface AnswerOrder {
  readonly indices: ArrayLike<number>;
  readonly unknown: readonly string[];
}

/** What an answer's loop wrote into its list of entries. */
export interface Written {
  /** The entries' total length. */
  readonly bytes: number;
  /** With `collect`, what it counted (to keep the answer with); undefined when it may not be kept. */
  readonly usage: readonly Outcome[] | undefined;
}

/** The templates' kind of `/proxy`'s answers, by selection (one string each, not one per request). */
const PROXY_KINDS: Readonly<Record<Selection['kind'], string>> = {
  enabled: 'proxy enabled',
  all: 'proxy all',
  named: 'proxy named',
};

/** Names the definitions do not have: answered disabled with the fallback variant, never counted. */
function unknownEntry(name: string): Buffer {
  return toggleEntry(disabledToggle(name, false));
}

/**
 * The answer loop of every answer listing toggles: each toggle of `order` evaluated once (or
 * remembered, or constant), counted, and its entry added to `entries`: `/proxy`'s entry, or with
 * the pass's shape, that shape's (`AnswerShape`). An answer listing every toggle whose context's
 * memo keys were seen before is written from their template instead (`template-pass.ts`).
 */
export function answerLoop(
  entries: Buffer[],
  pass: AnswerPass,
  selection: Selection,
  order: AnswerOrder,
): Written {
  const onlyEnabled = selection.kind === 'enabled';
  const countConstantsOnce = selection.kind !== 'named';
  const { revision, keys, shape, collect } = pass;
  const { plan, usage: tally } = revision;
  const { toggles, steps, table } = plan;
  const { kind: kinds, group: groups, slot: slots, constantId } = steps;
  const indices = order.indices;
  // an answer listing every toggle: from the template of the context's memo keys when there is one
  const signature =
    selection.kind === 'named'
      ? undefined
      : revision.templates.signature(
          shape === undefined ? PROXY_KINDS[selection.kind] : `${shape.kind} ${selection.kind}`,
          keys.all(),
        );
  const template = signature === undefined ? undefined : revision.templates.get(signature);
  if (template !== undefined) {
    fromTemplate(entries, pass, template, onlyEnabled);
    tally.countAnswer(template.usage);
  } else {
    // Per toggle, compact arrays decide (`toggle-steps.ts`, `outcome-table.ts`); a toggle's and an
    // outcome's objects are read only to evaluate it, or for an outcome that is not interned.
    for (let k = 0; k < indices.length; k++) {
      const i = indices[k];
      if (i < 0) {
        pass.push(entries, unknownEntry(order.unknown[-i - 1]));
        continue;
      }
      let id = -1;
      let outcome: Outcome | undefined;
      const kind = kinds[i];
      if (kind === CONSTANT) {
        id = constantId[i];
        if (id < 0) outcome = toggles[i].constant;
        if (!countConstantsOnce && id !== QUARANTINED) {
          if (id >= 0) tally.countId(id);
          else if (outcome) tally.count(outcome);
          if (collect) pass.counted.push(outcome ?? table.list[id]);
        }
      } else if (shape !== undefined && pass.isDecided(i)) {
        pass.push(entries, pass.decidedEntry(toggles[i], shape));
        continue;
      } else {
        if (kind === REMEMBERED) {
          const group = groups[i];
          const key = keys.ofGroup(group);
          if (key !== undefined) id = keys.rowOf(group, key)?.[slots[i]] ?? -1;
          if (id >= 0) {
            tally.countId(id);
            if (collect) pass.counted.push(table.list[id]);
          }
        }
        if (id < 0) {
          const evaluated = pass.at(i);
          if (typeof evaluated === 'number') id = evaluated;
          else outcome = evaluated;
        }
      }
      pass.put(entries, i, id, outcome, onlyEnabled);
    }
    // the memo now holds this context's remembered results: on a second sighting, its template is made
    if (signature !== undefined && revision.templates.admit(signature))
      makeTemplate(pass, signature, indices, onlyEnabled);
  }
  if (countConstantsOnce) tally.countAnswer(revision.constants);
  // A toggle that failed is not counted: such an answer is not kept, its usage would be wrong.
  const { bytes, counted, cacheable } = pass;
  const usage =
    !collect || !cacheable ? undefined : countConstantsOnce ? revision.constants.concat(counted) : counted;
  return { bytes, usage };
}
