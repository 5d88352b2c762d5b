import { SharedBudget, type BudgetMember } from '../budgets/shared-budget';
import { murmurHash32 } from '../upstream/murmur-hash';

export interface AnswerCacheOptions {
  /** Upper bound of the summed sizes of all entries (keys are fixed-size digests, counted in). */
  maxBytes: number;
  maxEntries: number;
  /** Keys remembered to admit an entry on its second sighting only. */
  maxSeen: number;
}

/** Where a cache's entries are counted: a budget and a doorkeeper shared by every cache of an app. */
export interface SharedAnswerBudget {
  readonly budget: SharedBudget;
  readonly doorkeeper: Doorkeeper;
}

/**
 * Keys (fixed-size digests) seen once: an entry is worth caching only when its key was seen before.
 * Kept as 32-bit fingerprints (MurmurHash3 of the key) in a fixed table of twice as many slots as
 * it remembers, open addressing: no key string is held, so a stream of one-off keys adds nothing
 * for the garbage collector to move. Two keys with one fingerprint only make an entry cached on
 * its first sighting (within the cache's bounds like every other). At `maxSeen` keys it starts again
 * empty.
 */
export class Doorkeeper {
  private readonly slots: Int32Array;
  private readonly mask: number;
  private count = 0;

  constructor(private readonly maxSeen: number) {
    let size = 2;
    while (size < 2 * maxSeen) size *= 2;
    this.slots = new Int32Array(size);
    this.mask = size - 1;
  }

  /** Records a sighting of the key; true when it had been seen before. */
  admit(key: string): boolean {
    // 0 marks an empty slot: a fingerprint is never 0
    const fingerprint = murmurHash32(key) | 1;
    const slots = this.slots;
    const mask = this.mask;
    let at = fingerprint & mask;
    for (;;) {
      const held = slots[at];
      if (held === fingerprint) return true;
      if (held === 0) break;
      at = (at + 1) & mask;
    }
    if (this.count >= this.maxSeen) {
      slots.fill(0);
      this.count = 0;
      at = fingerprint & mask;
    }
    slots[at] = fingerprint;
    this.count += 1;
    return false;
  }
}

/** An entry, its size in bytes, and whether it was read since eviction last passed over it. */
interface Slot<V> {
  readonly value: V;
  bytes: number;
  referenced: boolean;
}

/** What a key (a fixed-size digest) and a Map slot cost besides the value. */
const KEY_BYTES = 160;

/**
 * Whole answers of pure requests, keyed by their derived ETag (a fixed-size digest, never a
 * client-chosen value), with a doorkeeper: a key is worth caching only when it was seen
 * before, so a stream of one-off contexts neither churns the cache nor grows memory. Eviction is
 * second-chance (CLOCK), an approximation of LRU whose hit costs one lookup and a flag: the oldest
 * entry goes unless it was read since eviction last passed it, in which case it moves to the back.
 * Its bytes and entries count against a budget that may be shared with other caches (every view of
 * an app): a full budget takes entries from each cache in turn (`SharedBudget`). `close` gives
 * everything back.
 */
export class AnswerCache<V> implements BudgetMember {
  private readonly entries = new Map<string, Slot<V>>();
  private readonly budget: SharedBudget;
  private readonly doorkeeper: Doorkeeper;
  private bytes = 0;
  private closed = false;

  constructor(options: AnswerCacheOptions | SharedAnswerBudget) {
    if ('budget' in options) {
      this.budget = options.budget;
      this.doorkeeper = options.doorkeeper;
    } else {
      this.budget = new SharedBudget(options.maxBytes, options.maxEntries);
      this.doorkeeper = new Doorkeeper(options.maxSeen);
    }
    this.budget.join(this);
  }

  get size(): number {
    return this.entries.size;
  }

  get totalBytes(): number {
    return this.bytes;
  }

  get(key: string): V | undefined {
    const slot = this.entries.get(key);
    if (slot === undefined) return undefined;
    slot.referenced = true;
    return slot.value;
  }

  /** Records a sighting of the key; true when it had been seen before (worth caching now). */
  admit(key: string): boolean {
    return this.doorkeeper.admit(key);
  }

  /** Keeps `value` (of about `size` bytes) unless it is too large to keep: then it is only served. */
  set(key: string, value: V, size: number): void {
    const bytes = size + KEY_BYTES;
    if (this.closed || bytes > this.budget.maxBytes / 8) return;
    this.delete(key);
    if (!this.budget.reserve(bytes)) return;
    this.entries.set(key, { value, bytes, referenced: false });
    this.bytes += bytes;
  }

  /**
   * Counts `extra` more bytes for the entry under `key` (something kept with its value, e.g. its
   * compressed bytes), making room as `set` does; false, with nothing counted, when the entry is
   * gone (also when making room took it) or would outgrow what one entry may hold.
   */
  grow(key: string, extra: number): boolean {
    const slot = this.entries.get(key);
    if (this.closed || slot === undefined || slot.bytes + extra > this.budget.maxBytes / 8) return false;
    if (!this.budget.reserveMore(extra)) return false;
    if (this.entries.get(key) !== slot) {
      this.budget.release(extra, 0);
      return false;
    }
    slot.bytes += extra;
    this.bytes += extra;
    return true;
  }

  /**
   * Forgets the oldest entry not read since eviction last passed it; a read one moves to the back
   * with its flag cleared (one round clears every flag, so this ends within it).
   */
  evictOne(): boolean {
    for (;;) {
      const oldest = this.entries.entries().next();
      if (oldest.done) return false;
      const [oldestKey, slot] = oldest.value;
      if (slot.referenced && this.entries.size > 1) {
        slot.referenced = false;
        this.entries.delete(oldestKey);
        this.entries.set(oldestKey, slot);
      } else {
        this.delete(oldestKey);
        return true;
      }
    }
  }

  /** Forgets every entry, gives their bytes back and keeps nothing more. */
  close(): void {
    this.closed = true;
    for (const key of [...this.entries.keys()]) this.delete(key);
    this.budget.leave(this);
  }

  delete(key: string): void {
    const slot = this.entries.get(key);
    if (slot === undefined) return;
    this.entries.delete(key);
    this.bytes -= slot.bytes;
    this.budget.release(slot.bytes);
  }
}
