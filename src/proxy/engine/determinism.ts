import { Strategy, type Context } from 'unleash-client';
import type { FeatureInterface, Constraint, Segment } from '../upstream/sdk/types';
import { listOf } from '../upstream/toggle-faults';

/**
 * What a context must carry for a toggle's answer to be a pure function of the definitions and
 * that context, as `unleash-client` 6 evaluates it. Otherwise chance (`Math.random` seeds), the
 * clock, the host or code we do not know decides:
 * - `never`: a custom strategy, a random strategy without constraints, `random` variant
 *   stickiness, or `applicationHostname` (the same request gives other answers on other hosts);
 * - `chance`: random strategies (`gradualRolloutRandom`, `flexibleRollout` with `random`
 *   stickiness) behind constraints: chance decides only for a context that passes them;
 * - `currentTime`: a DATE_AFTER/DATE_BEFORE constraint compares with the clock unless the context
 *   says what time it is;
 * - `userOrSession`: a `flexibleRollout` with default stickiness rolls a die without either;
 * - `seed`: a variant split with default stickiness needs one of userId, sessionId, remoteAddress;
 * - `fields`: a variant split sticky on a custom field rolls a die when the field is missing.
 */
export interface Determinism {
  readonly never: boolean;
  readonly chance: readonly ChanceGuard[];
  readonly currentTime: boolean;
  readonly userOrSession: boolean;
  readonly seed: boolean;
  readonly fields: readonly string[];
}

/** The constraints (its own and its segments') in front of a random strategy. */
export interface ChanceGuard {
  readonly constraints: readonly (Constraint | undefined)[];
  /** The constraints as JSON: guards with the same key are the same check. */
  readonly key: string;
}

/** The SDK's own constraint check (built-in code, the same operators as evaluation). */
const constraintChecker = new Strategy('determinism-guard');

/** True when a context passes a random strategy's constraints: then chance decides for it. */
function reached(guard: ChanceGuard, context: Context): boolean {
  return constraintChecker.checkConstraints(context, guard.constraints.values());
}

export const ALWAYS_DETERMINISTIC: Determinism = Object.freeze({
  never: false,
  chance: Object.freeze([]) as readonly ChanceGuard[],
  currentTime: false,
  userOrSession: false,
  seed: false,
  fields: Object.freeze([]) as readonly string[],
});

interface Sources {
  isBuiltInStrategy(name: string): boolean;
  segment(id: number): Segment | undefined;
}

class Collector {
  never = false;
  readonly chance: ChanceGuard[] = [];
  /** Guards with the same constraints are one check: experiments often share a gate. */
  private readonly chanceKeys = new Set<string>();

  addChance(guard: ChanceGuard): void {
    if (this.chanceKeys.has(guard.key)) return;
    this.chanceKeys.add(guard.key);
    this.chance.push(guard);
  }
  currentTime = false;
  userOrSession = false;
  seed = false;
  readonly fields = new Set<string>();

  variantSeed(stickiness: unknown): void {
    if (stickiness === undefined || stickiness === null || stickiness === '' || stickiness === 'default')
      this.seed = true;
    else if (stickiness === 'random') this.never = true;
    else this.fields.add(String(stickiness));
  }

  constraints(list: readonly { operator?: unknown }[] | null | undefined): void {
    for (const c of listOf(list)) {
      if (c && (c.operator === 'DATE_AFTER' || c.operator === 'DATE_BEFORE')) this.currentTime = true;
    }
  }

  result(): Determinism {
    if (
      !this.never &&
      this.chance.length === 0 &&
      !this.currentTime &&
      !this.userOrSession &&
      !this.seed &&
      this.fields.size === 0
    )
      return ALWAYS_DETERMINISTIC;
    return {
      never: this.never,
      chance: this.never ? [] : this.chance,
      currentTime: this.currentTime,
      userOrSession: this.userOrSession,
      seed: this.seed,
      fields: [...this.fields].sort(),
    };
  }
}

/** What these definitions (a toggle and the parents it depends on) need of a context. */
export function determinismOf(features: readonly FeatureInterface[], sources: Sources): Determinism {
  const out = new Collector();
  for (const feature of features) {
    // a disabled toggle answers disabled whatever its strategies (or its parents') would say
    if (feature.enabled === false) continue;
    for (const strategy of Array.isArray(feature.strategies) ? feature.strategies : []) {
      const parameters = (strategy.parameters ?? {}) as Record<string, unknown>;
      const guard = (): ChanceGuard => {
        const constraints: (Constraint | undefined)[] = [
          ...listOf(strategy.constraints),
          ...listOf(strategy.segments).flatMap((id): readonly (Constraint | undefined)[] => {
            const segment = sources.segment(id);
            return segment ? listOf(segment.constraints) : [undefined];
          }),
        ];
        return { constraints, key: JSON.stringify(constraints) };
      };
      const random = (g: ChanceGuard) => {
        if (g.constraints.length === 0) out.never = true;
        else out.addChance(g);
      };
      if (!sources.isBuiltInStrategy(strategy.name) || strategy.name === 'applicationHostname')
        out.never = true;
      else if (strategy.name === 'gradualRolloutRandom') random(guard());
      else if (strategy.name === 'flexibleRollout') {
        const stickiness = parameters.stickiness || 'default';
        if (stickiness === 'default') out.userOrSession = true;
        else if (stickiness === 'random') random(guard());
      }
      out.constraints(strategy.constraints);
      for (const id of listOf(strategy.segments)) out.constraints(sources.segment(id)?.constraints);
      const variants = listOf(strategy.variants);
      if (variants.length > 0) {
        const seed = variants[0].stickiness || parameters.stickiness;
        // A flexibleRollout is enabled (and picks a variant) only with its stickiness value at
        // hand: a variant split on the same stickiness then always has its seed.
        const sameAsRollout =
          strategy.name === 'flexibleRollout' &&
          sources.isBuiltInStrategy(strategy.name) &&
          stickinessOf(seed) === stickinessOf(parameters.stickiness) &&
          stickinessOf(seed) !== 'random';
        if (!sameAsRollout) out.variantSeed(seed);
      }
    }
    const variants = listOf(feature.variants);
    if (variants.length > 0) out.variantSeed(variants[0].stickiness);
  }
  return out.result();
}

/** The union of several requirements: what a context needs for all of their answers to be pure. */
export function combine(list: readonly Determinism[]): Determinism {
  const out = new Collector();
  for (const d of list) {
    if (d === ALWAYS_DETERMINISTIC) continue;
    out.never ||= d.never;
    for (const g of d.chance) out.addChance(g);
    out.currentTime ||= d.currentTime;
    out.userOrSession ||= d.userOrSession;
    out.seed ||= d.seed;
    for (const f of d.fields) out.fields.add(f);
  }
  return out.result();
}

const stickinessOf = (value: unknown): string => (!value || value === 'default' ? 'default' : String(value));

const nonEmpty = (value: unknown) => typeof value === 'string' && value !== '';

/**
 * True when, for this (enhanced) context, the answer cannot depend on chance, the clock or the host.
 * With `clockKnown` the caller accounts for the clock itself (see `clockWindow`).
 */
export function isDeterministic(
  d: Determinism,
  context: Context,
  clockKnown = false,
  /** Checks of guards already made for this context, by `ChanceGuard.key` (toggles often share a gate). */
  checked?: Map<string, boolean>,
): boolean {
  if (d === ALWAYS_DETERMINISTIC) return true;
  if (d.never) return false;
  if (d.currentTime && !context.currentTime && !clockKnown) return false;
  for (const guard of d.chance) {
    let passes = checked?.get(guard.key);
    if (passes === undefined) {
      passes = reached(guard, context);
      checked?.set(guard.key, passes);
    }
    if (passes) return false;
  }
  if (d.userOrSession && !context.userId && !context.sessionId) return false;
  if (d.seed && !nonEmpty(context.userId) && !nonEmpty(context.sessionId) && !nonEmpty(context.remoteAddress))
    return false;
  for (const field of d.fields) {
    const root = (context as Record<string, unknown>)[field];
    const value = root ?? context.properties?.[field];
    if (!value) return false;
  }
  return true;
}

/** Epoch ms of every date a DATE_AFTER/DATE_BEFORE constraint of these definitions compares with. */
export function dateBoundaries(features: readonly FeatureInterface[], sources: Sources): number[] {
  const out = new Set<number>();
  const add = (list: readonly { operator?: unknown; value?: unknown }[] | null | undefined) => {
    for (const c of listOf(list)) {
      if (!c || (c.operator !== 'DATE_AFTER' && c.operator !== 'DATE_BEFORE')) continue;
      const at = new Date(String(c.value ?? '')).getTime();
      if (!Number.isNaN(at)) out.add(at);
    }
  };
  for (const feature of features) {
    for (const strategy of Array.isArray(feature.strategies) ? feature.strategies : []) {
      add(strategy.constraints);
      for (const id of listOf(strategy.segments)) add(sources.segment(id)?.constraints);
    }
  }
  return [...out].sort((a, b) => a - b);
}

/**
 * Where the clock stands among the dates date constraints compare with: every date constraint
 * gives the same result for two instants with the same window, so an answer is a pure function
 * of the definitions, the context and this window (the same on every replica whose clock agrees).
 * `lt.le`: how many dates are before `now`, and how many are at or before it (DATE_AFTER is
 * `now > date`, DATE_BEFORE `now < date`: the instant of a date is a window of its own).
 */
export function clockWindow(boundaries: readonly number[], now: number): string {
  let lt = 0;
  let le = 0;
  for (const at of boundaries) {
    if (at < now) lt += 1;
    if (at <= now) le += 1;
    else break;
  }
  return `${lt}.${le}`;
}
