/**
 * Bodies smaller than this are allocated as they come (`Buffer.allocUnsafe`: below 4 KB a slice of
 * Node's shared 8 KB pool, no memory of their own to allocate and free): reuse pays for large ones.
 */
const MIN_POOLED = 8 * 1024;
/** Free memory kept for reuse, all sizes together. */
const MAX_FREE_BYTES = 8 * 1024 * 1024;
/** Free buffers kept per size class. */
const MAX_FREE_PER_CLASS = 4;

/**
 * Memory for response bodies that are written once and then dropped (a new user's answer):
 * reused after the response finished, instead of a fresh allocation per request. A fresh buffer
 * of 100+ KB is new memory for the process, and copying a 2,000-flag answer into it cost about a
 * fifth of the request's CPU over HTTP (page faults on every new page, on a VM), against a few
 * percent when the memory was reused. Buffers come in power-of-two classes; at most
 * `MAX_FREE_PER_CLASS` per class and `MAX_FREE_BYTES` in all wait for reuse. A body is given back
 * only once its response finished (`write-reply.ts`); one that is never given back is collected
 * like every other buffer.
 */
export class BodyBuffers {
  private readonly free = new Map<number, Buffer[]>();
  private freeBytes = 0;

  /** A buffer of exactly `length` bytes (its memory possibly reused), and how to give it back. */
  take(length: number): { body: Buffer; release: (() => void) | undefined } {
    if (length < MIN_POOLED) return { body: Buffer.allocUnsafe(length), release: undefined };
    const capacity = 2 ** Math.ceil(Math.log2(length));
    let backing = this.free.get(capacity)?.pop();
    if (backing === undefined) backing = Buffer.allocUnsafeSlow(capacity);
    else this.freeBytes -= capacity;
    const memory = backing;
    let released = false;
    return {
      body: memory.subarray(0, length),
      release: () => {
        if (released) return;
        released = true;
        this.giveBack(capacity, memory);
      },
    };
  }

  private giveBack(capacity: number, backing: Buffer): void {
    let list = this.free.get(capacity);
    if (list === undefined) {
      list = [];
      this.free.set(capacity, list);
    }
    if (list.length >= MAX_FREE_PER_CLASS || this.freeBytes + capacity > MAX_FREE_BYTES) return;
    list.push(backing);
    this.freeBytes += capacity;
  }
}
