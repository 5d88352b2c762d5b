import type { FeatureInterface, Segment } from './sdk/types';
import { isListOperator } from '../../common/definitions/operators';
import { STRATEGY_PARAMETERS } from '../../common/definitions/strategy-parameters';

/**
 * What the proxy checks in definitions, toggle by toggle, once per revision. The SDK is the arbiter
 * of what definitions mean, so nothing it evaluates is refused: a toggle is only
 * - **quarantined** when its shape makes `unleash-client` 6 throw while evaluating it (a list
 *   operator without a list, a built-in strategy without parameters, a null strategy or variant,
 *   a dependency on a quarantined toggle, …): it is answered disabled (OFREP: `ERROR`/`GENERAL`),
 *   never handed to the SDK, and logged once per revision naming the field;
 * - **irregular** when the SDK evaluates it but its types are not the client API's (a number where a
 *   string belongs, a string where a list belongs, a segment the answer lacks, …): the SDK
 *   evaluates it on every request, without the proxy's own analysis (memo, constant answers,
 *   derived validators), so its answer is exactly the SDK's.
 * Every other toggle is regular and compiled (`engine/plan.ts`).
 */
export interface ToggleFault {
  readonly toggle: string;
  /** The field, relative to the toggle, e.g. `strategies[0].constraints[1].values`. */
  readonly path: string;
  readonly problem: string;
  /** One line naming all of the above. */
  readonly message: string;
}

export interface DefinitionsFaults {
  /** Toggles answered disabled without evaluating, by name. */
  readonly quarantined: ReadonlyMap<string, ToggleFault>;
  /** Toggles the SDK evaluates on every request, without the proxy's own analysis. */
  readonly irregular: ReadonlySet<string>;
}

export const NO_FAULTS: DefinitionsFaults = { quarantined: new Map(), irregular: new Set() };

type Severity = 'throws' | 'irregular';

interface Finding {
  readonly severity: Severity;
  readonly path: string;
  readonly problem: string;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const own = (record: Record<string, unknown>, key: string): unknown =>
  Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;

const isNullish = (value: unknown) => value === undefined || value === null;

/** A definition's list as the SDK reads it (`Array.isArray` first), empty for anything else. */
export const listOf = <T>(value: readonly T[] | null | undefined): readonly T[] =>
  Array.isArray(value) ? value : [];

/** Collects findings of one toggle; the first one that throws decides, else the first irregular one. */
class Findings {
  readonly list: Finding[] = [];
  throws(path: string, problem: string): void {
    this.list.push({ severity: 'throws', path, problem });
  }
  irregular(path: string, problem: string): void {
    this.list.push({ severity: 'irregular', path, problem });
  }
  worst(): Finding | undefined {
    return this.list.find((f) => f.severity === 'throws') ?? this.list[0];
  }
}

function checkConstraint(c: unknown, path: string, out: Findings): void {
  if (!isRecord(c)) {
    // the SDK answers a missing or non-object constraint false
    out.irregular(path, 'a constraint that is not an object');
    return;
  }
  const operator = own(c, 'operator');
  if (typeof own(c, 'contextName') !== 'string') out.irregular(`${path}.contextName`, 'not a string');
  if (typeof operator !== 'string') {
    out.irregular(`${path}.operator`, 'not a string');
    return;
  }
  if (isListOperator(operator)) {
    const values = own(c, 'values');
    if (!Array.isArray(values)) {
      out.throws(`${path}.values`, `${operator} needs a list of strings`);
      return;
    }
    values.forEach((v, i) => {
      if (typeof v === 'string') return;
      if (v) out.throws(`${path}.values[${i}]`, 'not a string');
      else out.irregular(`${path}.values[${i}]`, 'not a string');
    });
  } else if (!isNullish(own(c, 'value')) && typeof own(c, 'value') !== 'string') {
    out.irregular(`${path}.value`, 'not a string');
  }
  for (const flag of ['inverted', 'caseInsensitive']) {
    const value = own(c, flag);
    if (!isNullish(value) && typeof value !== 'boolean') out.irregular(`${path}.${flag}`, 'not a boolean');
  }
}

/**
 * A strategy's constraints are read with `if (strategy.constraints)`, so any falsy value is none;
 * a segment's with `segment.constraints ?? []`, so there `false` and `0` throw.
 */
function checkConstraints(list: unknown, path: string, out: Findings, falsyIsNone = true): void {
  if (isNullish(list) || list === '') return;
  if (list === false || list === 0) {
    if (!falsyIsNone) out.throws(path, 'not a list');
    return;
  }
  if (typeof list === 'string') {
    out.irregular(path, 'a string where a list belongs');
    return;
  }
  if (!Array.isArray(list)) {
    out.throws(path, 'not a list');
    return;
  }
  list.forEach((c, i) => checkConstraint(c, `${path}[${i}]`, out));
}

function checkVariants(list: unknown, path: string, out: Findings): void {
  if (isNullish(list)) return;
  if (!Array.isArray(list)) {
    out.irregular(path, 'not a list'); // the SDK ignores variants that are not a list
    return;
  }
  list.forEach((v, i) => {
    const at = `${path}[${i}]`;
    if (!isRecord(v)) {
      out.throws(at, 'a variant that is not an object');
      return;
    }
    if (typeof own(v, 'name') !== 'string') out.irregular(`${at}.name`, 'not a string');
    const weight = own(v, 'weight');
    if (typeof weight !== 'number' || !Number.isFinite(weight)) out.irregular(`${at}.weight`, 'not a number');
    const stickiness = own(v, 'stickiness');
    if (!isNullish(stickiness) && typeof stickiness !== 'string') {
      out.irregular(`${at}.stickiness`, 'not a string');
    }
    const payload = own(v, 'payload');
    if (
      !isNullish(payload) &&
      (!isRecord(payload) ||
        typeof own(payload, 'type') !== 'string' ||
        typeof own(payload, 'value') !== 'string')
    ) {
      out.irregular(`${at}.payload`, 'not an object with a string type and value');
    }
    const overrides = own(v, 'overrides');
    if (!overrides) return;
    if (!Array.isArray(overrides)) {
      out.throws(`${at}.overrides`, 'not a list');
      return;
    }
    overrides.forEach((o, j) => {
      const oat = `${at}.overrides[${j}]`;
      if (!isRecord(o)) {
        out.throws(oat, 'an override that is not an object');
        return;
      }
      if (!Array.isArray(own(o, 'values'))) out.throws(`${oat}.values`, 'not a list');
      if (typeof own(o, 'contextName') !== 'string') out.irregular(`${oat}.contextName`, 'not a string');
    });
  });
}

function checkSegments(
  ids: unknown,
  path: string,
  segment: (id: number) => Segment | undefined,
  out: Findings,
): void {
  if (isNullish(ids)) return;
  if (!Array.isArray(ids)) {
    // the SDK calls `segments?.map`: anything else, even false or 0, throws
    out.throws(path, 'not a list');
    return;
  }
  ids.forEach((id, i) => {
    const found = typeof id === 'number' ? segment(id) : undefined;
    if (!found) {
      // the SDK evaluates the strategy as off: a segment it cannot find fails its constraints
      out.irregular(`${path}[${i}]`, `segment ${JSON.stringify(id)} is not in the answer's segments`);
      return;
    }
    const constraints: unknown = (found as unknown as Record<string, unknown>).constraints;
    checkConstraints(constraints, `${path}[${i}](segment ${id}).constraints`, out, false);
  });
}

function checkParameters(
  name: unknown,
  parameters: unknown,
  hasVariants: boolean,
  builtIn: boolean,
  path: string,
  out: Findings,
): void {
  // a built-in strategy reading its `parameters` object (so it must be there), and the parameter it reads
  const reads = builtIn && typeof name === 'string' ? STRATEGY_PARAMETERS.get(name) : undefined;
  if (isNullish(parameters)) {
    if (reads) out.throws(path, `strategy ${String(name)} reads its parameters`);
    else if (hasVariants) out.throws(path, 'strategy variants read parameters.stickiness');
    return;
  }
  if (!isRecord(parameters)) {
    out.irregular(path, 'not an object');
    return;
  }
  for (const [key, value] of Object.entries(parameters)) {
    if (typeof value !== 'string' && typeof value !== 'number')
      out.irregular(`${path}.${key}`, 'not a string');
  }
  // a string method is called on it when it is truthy
  const stringParameter = reads?.kind === 'string' ? reads.name : undefined;
  if (stringParameter !== undefined) {
    const value = own(parameters, stringParameter);
    if (value && typeof value !== 'string') out.throws(`${path}.${stringParameter}`, 'not a string');
  }
}

function checkStrategy(
  s: unknown,
  path: string,
  isBuiltInStrategy: (name: string) => boolean,
  segment: (id: number) => Segment | undefined,
  out: Findings,
): void {
  if (isNullish(s)) {
    out.throws(path, 'a strategy that is null');
    return;
  }
  if (!isRecord(s)) {
    out.irregular(path, 'a strategy that is not an object');
    return;
  }
  const name = own(s, 'name');
  if (typeof name !== 'string') out.irregular(`${path}.name`, 'not a string');
  const builtIn = typeof name === 'string' && isBuiltInStrategy(name);
  const variants = own(s, 'variants');
  const hasVariants = Array.isArray(variants) && variants.length > 0;
  checkParameters(name, own(s, 'parameters'), hasVariants, builtIn, `${path}.parameters`, out);
  checkConstraints(own(s, 'constraints'), `${path}.constraints`, out);
  checkSegments(own(s, 'segments'), `${path}.segments`, segment, out);
  checkVariants(variants, `${path}.variants`, out);
}

/** True when making `value` a string throws (an object whose own `toString` is no function, or a list holding one). */
function unconvertible(value: unknown): boolean {
  try {
    String(value);
    return false;
  } catch {
    return true;
  }
}

/**
 * The toggle's own variants as the SDK chooses one for an evaluation that enabled the toggle and
 * got no strategy's variant (`selectVariant`): the weights added up (`acc + v.weight` from 0), then,
 * unless an override may answer first, the first variant's stickiness read as a context field
 * (`context[stickiness]`). When no strategy of the toggle has variants, every evaluation that
 * enables it comes here, so a sum or a field name that cannot be made a string throws on every
 * one of them; every other evaluation answers the toggle disabled. Quarantined, it is answered
 * disabled for every context: the same answers. (Checked for an enabled toggle without parents.)
 */
function checkVariantChoice(
  record: Record<string, unknown>,
  strategies: readonly unknown[],
  out: Findings,
): void {
  const variants = own(record, 'variants');
  if (!Array.isArray(variants) || variants.length === 0) return;
  const strategyVariants = (s: unknown) => (isRecord(s) ? own(s, 'variants') : undefined);
  // a strategy's variants answer first when it enables the toggle: then not every enabled evaluation comes here
  if (
    strategies.some((s) => {
      const list = strategyVariants(s);
      return !isNullish(list) && !(Array.isArray(list) && list.length === 0);
    })
  )
    return;
  let total: unknown = 0;
  try {
    for (const v of variants as { weight: number }[]) total = (total as number) + v.weight;
  } catch {
    out.throws('variants', 'weights that cannot be added up');
    return;
  }
  if ((total as number) <= 0) return;
  if (variants.some((v) => isRecord(v) && own(v, 'overrides'))) return;
  const first: unknown = variants[0];
  const stickiness = isRecord(first) ? own(first, 'stickiness') : undefined;
  if (stickiness !== undefined && unconvertible(stickiness))
    out.throws('variants[0].stickiness', 'cannot be read as the name of a context field');
}

interface Parent {
  readonly index: number;
  readonly name: string;
}

function checkDependencies(deps: unknown, out: Findings): Parent[] {
  const parents: Parent[] = [];
  if (isNullish(deps)) return parents;
  const length = (deps as { length?: unknown }).length;
  if (!Array.isArray(deps)) {
    if (length) out.throws('dependencies', 'not a list');
    else out.irregular('dependencies', 'not a list');
    return parents;
  }
  deps.forEach((d, i) => {
    const at = `dependencies[${i}]`;
    if (isNullish(d)) {
      out.throws(at, 'a dependency that is null');
      return;
    }
    if (!isRecord(d)) {
      out.irregular(at, 'a dependency that is not an object');
      return;
    }
    const parent = own(d, 'feature');
    if (typeof parent === 'string') parents.push({ index: i, name: parent });
    else out.irregular(`${at}.feature`, 'not a string');
    const variants = own(d, 'variants');
    if (!isNullish(variants) && !Array.isArray(variants)) out.irregular(`${at}.variants`, 'not a list');
    const enabled = own(d, 'enabled');
    if (!isNullish(enabled) && typeof enabled !== 'boolean') out.irregular(`${at}.enabled`, 'not a boolean');
  });
  return parents;
}

/** The findings of one toggle, and the names of the parents it depends on. */
function checkToggle(
  feature: FeatureInterface,
  isBuiltInStrategy: (name: string) => boolean,
  segment: (id: number) => Segment | undefined,
): { finding: Finding | undefined; parents: Parent[] } {
  const out = new Findings();
  const record = feature as unknown as Record<string, unknown>;
  if (typeof own(record, 'enabled') !== 'boolean') out.irregular('enabled', 'not a boolean');
  const strategies = own(record, 'strategies');
  if (!Array.isArray(strategies)) {
    // the SDK answers such a toggle disabled and reports an error on every evaluation
    out.throws('strategies', 'not a list');
  } else {
    strategies.forEach((s, i) => checkStrategy(s, `strategies[${i}]`, isBuiltInStrategy, segment, out));
    // Values read by every evaluation of an enabled toggle without parents (one with parents, or
    // disabled, is not evaluated for every context: a child asking for it disabled would then be
    // evaluated by the SDK, not failed). A name that is no string names no strategy, and the SDK
    // makes its warning's key of it (`missingStrategy + name`): the first strategy's is read by every
    // evaluation, a later one's only when the ones before it did not enable the toggle.
    const deps = own(record, 'dependencies');
    if (own(record, 'enabled') && (isNullish(deps) || (Array.isArray(deps) && deps.length === 0))) {
      const first: unknown = strategies[0];
      if (isRecord(first) && typeof own(first, 'name') !== 'string' && unconvertible(own(first, 'name')))
        out.throws('strategies[0].name', 'cannot be made a string');
      checkVariantChoice(record, strategies, out);
    }
  }
  checkVariants(own(record, 'variants'), 'variants', out);
  const parents = checkDependencies(own(record, 'dependencies'), out);
  return { finding: out.worst(), parents };
}

/** Names a string of the upstream for a log line, escaped and cut short. */
export const quote = (text: string): string =>
  JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}…` : text);

/**
 * The faults of one definitions revision. A toggle depending on a quarantined toggle is quarantined
 * too (the SDK evaluates its parent while evaluating it); one depending on an irregular toggle is
 * irregular.
 */
export function findFaults(
  features: readonly FeatureInterface[],
  isBuiltInStrategy: (name: string) => boolean,
  segment: (id: number) => Segment | undefined,
): DefinitionsFaults {
  const quarantined = new Map<string, ToggleFault>();
  const irregular = new Set<string>();
  const parentsOf = new Map<string, Parent[]>();
  const fault = (toggle: string, path: string, problem: string): ToggleFault => ({
    toggle,
    path,
    problem,
    message: `toggle ${quote(toggle)} at ${path}: ${problem}`,
  });
  for (const feature of features) {
    const { finding, parents } = checkToggle(feature, isBuiltInStrategy, segment);
    parentsOf.set(feature.name, parents);
    if (finding?.severity === 'throws')
      quarantined.set(feature.name, fault(feature.name, finding.path, finding.problem));
    else if (finding) irregular.add(feature.name);
  }
  // Dependencies are one level deep in the SDK (a parent with dependencies of its own is false).
  for (const [name, parents] of parentsOf) {
    if (quarantined.has(name)) continue;
    const broken = parents.find((p) => quarantined.has(p.name));
    if (broken) {
      quarantined.set(
        name,
        fault(
          name,
          `dependencies[${broken.index}].feature`,
          `its parent ${quote(broken.name)} is quarantined`,
        ),
      );
    } else if (parents.some((p) => irregular.has(p.name))) irregular.add(name);
  }
  for (const name of quarantined.keys()) irregular.delete(name);
  return { quarantined, irregular };
}
