import type { Constraint } from '../../upstream/sdk/types';
import { compileConstraint, constraintKey, NotCompiled, type Check } from './constraints';

const NEVER: Check = () => false;

/**
 * The distinct constraint checks of one definitions revision: constraints that are the same check
 * (same field, operator, values, flags) share one id, so a request computes each once
 * (`RequestScope.shared`) however many toggles and segments repeat it.
 */
export class Checks {
  private readonly byKey = new Map<string, { id: number; check: Check }>();
  private count = 0;

  /** The shared check of a constraint; throws `NotCompiled` for one the engine does not know. */
  of(constraint: unknown): { id: number; check: Check } {
    // the SDK answers false for a missing constraint (and for a segment it does not have)
    if (constraint === undefined || constraint === null) return this.never();
    if (typeof constraint !== 'object') throw new NotCompiled('a constraint not an object');
    const key = constraintKey(constraint as Constraint);
    let known = this.byKey.get(key);
    if (known === undefined) {
      known = { id: this.count++, check: compileConstraint(constraint as Constraint) };
      this.byKey.set(key, known);
    }
    return known;
  }

  /**
   * A check of the context other than a constraint (a strategy that reads nothing but the
   * context, e.g. `remoteAddress` with its list), shared under `key` like a constraint's.
   */
  shared(key: string, make: () => Check): { id: number; check: Check } {
    let known = this.byKey.get(key);
    if (known === undefined) {
      known = { id: this.count++, check: make() };
      this.byKey.set(key, known);
    }
    return known;
  }

  /** The check that always fails. */
  never(): { id: number; check: Check } {
    let known = this.byKey.get('never');
    if (known === undefined) {
      known = { id: this.count++, check: NEVER };
      this.byKey.set('never', known);
    }
    return known;
  }

  /** How many distinct checks there are: the size of a request's scope. */
  get size(): number {
    return this.count;
  }
}
