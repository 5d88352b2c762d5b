export interface AnswerCacheOptions {
  /** Upper bound of the summed sizes of all entries (keys are fixed-size digests, counted in). */
  maxBytes: number;
  maxEntries: number;
  /** Keys remembered to admit an entry on its second sighting only. */
  maxSeen: number;
}

/** An entry, its size in bytes, and whether it was read since eviction last passed over it. */
interface Slot<V> {
  readonly value: V;
  readonly bytes: number;
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
 */
export class AnswerCache<V> {
  private readonly entries = new Map<string, Slot<V>>();
  private seen = new Set<string>();
  private bytes = 0;

  constructor(private readonly options: AnswerCacheOptions) {}

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
    if (this.seen.has(key)) return true;
    if (this.seen.size >= this.options.maxSeen) this.seen = new Set();
    this.seen.add(key);
    return false;
  }

  /** Keeps `value` (of about `size` bytes) unless it is too large to keep: then it is only served. */
  set(key: string, value: V, size: number): void {
    const bytes = size + KEY_BYTES;
    if (bytes > this.options.maxBytes / 8) return;
    this.delete(key);
    this.entries.set(key, { value, bytes, referenced: false });
    this.bytes += bytes;
    while (this.bytes > this.options.maxBytes || this.entries.size > this.options.maxEntries) {
      const oldest = this.entries.entries().next();
      if (oldest.done) break;
      const [oldestKey, slot] = oldest.value;
      if ((slot.referenced || oldestKey === key) && this.entries.size > 1) {
        // A read entry, or the one being added, moves to the back with its flag cleared: one round
        // clears every flag, so the loop ends within it.
        slot.referenced = false;
        this.entries.delete(oldestKey);
        this.entries.set(oldestKey, slot);
      } else {
        this.delete(oldestKey);
      }
    }
  }

  delete(key: string): void {
    const slot = this.entries.get(key);
    if (slot === undefined) return;
    this.entries.delete(key);
    this.bytes -= slot.bytes;
  }
}
