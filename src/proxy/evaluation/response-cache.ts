/** Something the cache holds, with its approximate size in bytes. */
export interface Sized {
  readonly bytes: number;
}

export interface ResponseCacheOptions {
  /** Upper bound of the summed `bytes` of all entries. */
  maxBytes: number;
  maxEntries: number;
  /** Keys remembered to admit an entry on its second sighting only. */
  maxSeen: number;
}

/**
 * A bounded LRU keyed by strings, with a doorkeeper: a key is worth caching only when it was seen
 * before, so a stream of one-off contexts neither churns the cache nor grows memory.
 */
export class ResponseCache<V extends Sized> {
  private readonly entries = new Map<string, V>();
  private seen = new Set<string>();
  private bytes = 0;

  constructor(private readonly options: ResponseCacheOptions) {}

  get size(): number {
    return this.entries.size;
  }

  get totalBytes(): number {
    return this.bytes;
  }

  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, value);
    return value;
  }

  /** Records a sighting of the key; true when it had been seen before (worth caching now). */
  admit(key: string): boolean {
    if (this.seen.has(key)) return true;
    if (this.seen.size >= this.options.maxSeen) this.seen = new Set();
    this.seen.add(key);
    return false;
  }

  set(key: string, value: V): void {
    if (value.bytes > this.options.maxBytes / 8) return;
    this.delete(key);
    this.entries.set(key, value);
    this.bytes += value.bytes;
    while (this.bytes > this.options.maxBytes || this.entries.size > this.options.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.delete(oldest.value);
    }
  }

  delete(key: string): void {
    const value = this.entries.get(key);
    if (value === undefined) return;
    this.entries.delete(key);
    this.bytes -= value.bytes;
  }
}
