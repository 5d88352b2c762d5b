import type { Outcome } from './outcomes';

const INITIAL_CAPACITY = 64;

/**
 * The interned outcomes of one definitions revision (`Outcome.id` is the index) and, beside the
 * objects, what the answer loop reads of them in typed arrays: whether each is enabled, the length
 * of its serialised entry, and the entry itself. A new user's answer of thousands of toggles then
 * reads numbers from a few compact arrays instead of one object per toggle (at 2,000 toggles the
 * objects of a revision outgrow the CPU's caches, and reading one is a cache miss). Grows as
 * outcomes are interned (bounded per toggle by `outcomes.ts`).
 */
export class OutcomeTable {
  /** The outcomes by id: `Plan.outcomes`. */
  readonly list: Outcome[] = [];
  /** The entries by id, read only when the answer is written. */
  readonly entries: Buffer[] = [];
  private enabledById = new Uint8Array(INITIAL_CAPACITY);
  private sizeById = new Int32Array(INITIAL_CAPACITY);

  /** The id the next interned outcome gets. */
  get nextId(): number {
    return this.list.length;
  }

  /** Interns `outcome`, whose id must be `nextId`. */
  add(outcome: Outcome): void {
    const id = this.list.length;
    if (outcome.id !== id)
      throw new Error(`outcome ${outcome.name} interned as ${outcome.id}, expected ${id}`);
    if (id === this.sizeById.length) {
      const enabled = new Uint8Array(id * 2);
      enabled.set(this.enabledById);
      this.enabledById = enabled;
      const size = new Int32Array(id * 2);
      size.set(this.sizeById);
      this.sizeById = size;
    }
    this.list.push(outcome);
    this.entries.push(outcome.entry);
    this.enabledById[id] = outcome.enabled ? 1 : 0;
    this.sizeById[id] = outcome.entry.length;
  }

  /** The arrays by id as they are now (replaced when the table grows: read them again after interning). */
  get enabled(): Uint8Array {
    return this.enabledById;
  }

  get sizes(): Int32Array {
    return this.sizeById;
  }
}
