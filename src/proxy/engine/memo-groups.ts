import type { FeatureInterface } from '../upstream/sdk/types';
import type { FastEvaluation } from '../upstream/feature-repository';
import { listOf } from '../upstream/toggle-faults';
import { ALWAYS_DETERMINISTIC, type Determinism } from './determinism';

/**
 * Toggles remembered under the same key for a context: the same input fields and determinism. Its
 * memo keeps, per key (the values of the input fields), one row with a slot per toggle of the group.
 */
export interface MemoGroup {
  readonly inputs: readonly string[];
  readonly determinism: Determinism;
  /** Toggles in the group: the length of a row. */
  size: number;
  /** Rows by key, oldest first. */
  readonly memo: Map<string, MemoRow>;
}

/**
 * The remembered results of a memo group's toggles for one key, by `CompiledToggle.slot`: the
 * interned outcome's id, -1 when not known yet (only interned outcomes are remembered).
 */
export type MemoRow = Int32Array;

/** Context fields whose values differ per user or device: remembering results by them would not pay. */
const PER_USER = new Set(['userId', 'sessionId']);

/**
 * Every context field the SDK's built-in code may read when evaluating these definitions, or
 * undefined when code we do not know runs (a custom strategy) or the shape is unusual. Mirrors
 * `unleash-client` 6: constraints read `context[name] ?? context.properties[name]` (date operators
 * read only `currentTime`), strategies read the fields below, variant selection reads its
 * stickiness field (or userId/sessionId/remoteAddress) and its overrides' fields.
 */
function inputsOf(features: readonly FeatureInterface[], fast: FastEvaluation): Set<string> | undefined {
  const fields = new Set<string>();
  const seed = (stickiness: unknown) => {
    if (!stickiness || stickiness === 'default')
      for (const f of ['userId', 'sessionId', 'remoteAddress']) fields.add(f);
    else fields.add(String(stickiness));
  };
  for (const feature of features) {
    if (!Array.isArray(feature.strategies)) return undefined;
    for (const strategy of feature.strategies) {
      if (!fast.isBuiltInStrategy(strategy.name)) return undefined;
      const parameters = (strategy.parameters ?? {}) as Record<string, unknown>;
      switch (strategy.name) {
        case 'flexibleRollout': {
          fields.add('featureToggle');
          const stickiness = typeof parameters.stickiness === 'string' ? parameters.stickiness : '';
          if (!stickiness || stickiness === 'default') {
            fields.add('userId');
            fields.add('sessionId');
          } else if (stickiness !== 'random') fields.add(stickiness);
          break;
        }
        case 'gradualRolloutUserId':
        case 'userWithId':
          fields.add('userId');
          break;
        case 'gradualRolloutSessionId':
          fields.add('sessionId');
          break;
        case 'remoteAddress':
          fields.add('remoteAddress');
          break;
        default:
          break; // default, applicationHostname, gradualRolloutRandom, or unknown (skipped by the SDK)
      }
      const variants = listOf(strategy.variants);
      if (variants.length > 0) seed(variants[0].stickiness || parameters.stickiness);
      for (const v of variants) for (const o of listOf(v.overrides)) fields.add(o.contextName);
      for (const c of listOf(strategy.constraints)) fields.add(constraintField(c));
      for (const id of listOf(strategy.segments))
        for (const c of listOf(fast.segment(id)?.constraints)) fields.add(constraintField(c));
    }
    const variants = listOf(feature.variants);
    if (variants.length > 0) seed(variants[0].stickiness);
    for (const v of variants) for (const o of listOf(v.overrides)) fields.add(o.contextName);
  }
  return fields;
}

function constraintField(c: { operator: string; contextName: string }): string {
  return c.operator === 'DATE_AFTER' || c.operator === 'DATE_BEFORE' ? 'currentTime' : c.contextName;
}

/**
 * The context fields (sorted) the results of a toggle and its parents are remembered by, or
 * undefined when they are not remembered: a custom strategy runs, or a field read is per user.
 */
export function memoInputs(
  features: readonly FeatureInterface[],
  fast: FastEvaluation,
): string[] | undefined {
  const fields = inputsOf(features, fast);
  if (!fields) return undefined;
  for (const f of fields) {
    if (PER_USER.has(f) || f === 'properties' || f === '__proto__' || f in Object.prototype) return undefined;
  }
  return [...fields].sort();
}

/** The memo groups of one revision, and one array per distinct input-field list. */
export class MemoGroups {
  readonly list: MemoGroup[] = [];
  private readonly lists = new Map<string, readonly string[]>();
  private readonly ids = new Map<string, number>();

  /** The memo group of a toggle with these inputs and this determinism, and its slot there; -1 without inputs. */
  join(inputs: readonly string[] | undefined, determinism: Determinism): { group: number; slot: number } {
    if (inputs === undefined) return { group: -1, slot: -1 };
    const id = JSON.stringify([
      inputs,
      determinism === ALWAYS_DETERMINISTIC ? 'always' : determinism,
      determinism.chance.map((g) => g.key),
    ]);
    let group = this.ids.get(id);
    if (group === undefined) {
      group = this.list.length;
      this.list.push({ inputs, determinism, size: 0, memo: new Map() });
      this.ids.set(id, group);
    }
    const slot = this.list[group].size;
    this.list[group].size += 1;
    return { group, slot };
  }

  /** The revision's one array with these fields, so a request computes each distinct memo key once. */
  inputList(fields: readonly string[] | undefined): readonly string[] | undefined {
    if (fields === undefined) return undefined;
    const id = JSON.stringify(fields);
    const known = this.lists.get(id);
    if (known) return known;
    this.lists.set(id, fields);
    return fields;
  }
}
