/** Something holding part of a shared budget that can give up one item of it when asked. */
export interface BudgetMember {
  /** Forgets one item (releasing its bytes from the budget); false when it holds none. */
  evictOne(): boolean;
}

/**
 * Bytes (and items) shared by many holders — the answer caches or the memos of every environment
 * and project view of one app. A holder reserves before it keeps an item and releases what it
 * forgets. When a reservation does not fit, the holders give up one item each in turn (round
 * robin), the reserving one included, until it fits: a new view is never locked out by the full
 * caches of others, and no holder is emptied at once.
 */
export class SharedBudget {
  private used = 0;
  private items = 0;
  private readonly members: BudgetMember[] = [];
  private hand = 0;

  constructor(
    readonly maxBytes: number,
    readonly maxItems = Number.POSITIVE_INFINITY,
  ) {}

  get bytes(): number {
    return this.used;
  }

  get size(): number {
    return this.items;
  }

  get memberCount(): number {
    return this.members.length;
  }

  join(member: BudgetMember): void {
    this.members.push(member);
  }

  /** Stops asking `member` for room; it releases what it holds itself. */
  leave(member: BudgetMember): void {
    const at = this.members.indexOf(member);
    if (at < 0) return;
    this.members.splice(at, 1);
    if (this.hand > at) this.hand -= 1;
    if (this.hand >= this.members.length) this.hand = 0;
  }

  /** Room for one item of `bytes`, made by evicting round robin; false when it cannot be made. */
  reserve(bytes: number): boolean {
    if (bytes > this.maxBytes || this.maxItems < 1) return false;
    while (this.used + bytes > this.maxBytes || this.items + 1 > this.maxItems) {
      if (!this.evictNext()) return false;
    }
    this.used += bytes;
    this.items += 1;
    return true;
  }

  /**
   * Room for `bytes` more of an item already held (it grew), made by evicting round robin; false
   * when it cannot be made. The eviction may take that very item: the holder checks it still has it.
   */
  reserveMore(bytes: number): boolean {
    if (bytes > this.maxBytes) return false;
    while (this.used + bytes > this.maxBytes) {
      if (!this.evictNext()) return false;
    }
    this.used += bytes;
    return true;
  }

  /** `items` items (one by default) of `bytes` in all forgotten. */
  release(bytes: number, items = 1): void {
    this.used -= bytes;
    this.items -= items;
  }

  private evictNext(): boolean {
    for (let tried = 0; tried < this.members.length; tried++) {
      if (this.hand >= this.members.length) this.hand = 0;
      const member = this.members[this.hand];
      this.hand += 1;
      if (member.evictOne()) return true;
    }
    return false;
  }
}
