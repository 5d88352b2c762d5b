import { BODY_OVERHEAD } from './batches';
import type { ValidatedToken } from './validation-client';
import { ValidationUnavailable } from './validation-unavailable';
import type { TokenValidatorLimits } from './validator-limits';

/** What a request learns: the upstream's confirmation, `null` for a refusal, or a 503 to send. */
export type Verdict = ValidatedToken | null | ValidationUnavailable;

/**
 * Who waits for tokens, for fairness: one request of the frontend API (one token), or one
 * `/edge/validate` request however many tokens it carries. When the queue is full, the caller
 * holding the most queued tokens gives one up; a batch takes the callers' tokens in turns.
 */
export class ValidationCaller {}

/** One request waiting for a token's answer. */
interface Waiter {
  readonly entry: Entry;
  readonly caller: ValidationCaller;
  readonly resolve: (verdict: Verdict) => void;
  readonly timer: NodeJS.Timeout;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/** An unknown token: queued (waiting to be sent) or sent (its call in flight). */
interface Entry {
  readonly token: string;
  /** Bytes the token adds to a call's body (its JSON string and a comma). */
  readonly bytes: number;
  sent: boolean;
  readonly waiters: Set<Waiter>;
  /** Waiters per caller. */
  readonly callers: Map<ValidationCaller, number>;
}

export interface WaitingTokensOptions {
  readonly limits: Pick<
    TokenValidatorLimits,
    'maxQueued' | 'maxWaiters' | 'maxWaitersPerToken' | 'maxWaitMs' | 'maxBatchTokens'
  >;
  /** The 503 for a request that stops waiting (its `Retry-After` follows the validator's pause). */
  readonly unavailable: (reason: string) => ValidationUnavailable;
}

/**
 * The unknown tokens requests wait for, and the requests waiting: tokens queued (bounded; when
 * full, the caller holding the most queued tokens gives up its oldest, so one request's tokens
 * never push out another caller's key) or sent (their call in flight), and each waiter bounded in
 * number and in time. A batch takes the callers' tokens in turns, newest caller and newest token
 * first (LIFO).
 */
export class WaitingTokens {
  /** Tokens waiting to be sent. */
  private readonly queue = new Map<string, Entry>();
  /** The queued tokens each caller waits for, oldest first; callers in the order they first queued. */
  private readonly claims = new Map<ValidationCaller, Set<Entry>>();
  /** Tokens whose call is in flight. */
  private readonly sent = new Map<string, Entry>();
  private waiterCount = 0;
  private bytes = 0;
  /** Requests answered 503 because of a bound (queue, waiters, wait time) rather than the upstream. */
  shed = 0;
  /** Requests that stopped waiting because their client went. */
  abandoned = 0;

  constructor(private readonly options: WaitingTokensOptions) {}

  /** Requests waiting for an answer. */
  get waiters(): number {
    return this.waiterCount;
  }

  /** Tokens waiting to be sent. */
  get queued(): number {
    return this.queue.size;
  }

  /** Tokens whose call is in flight. */
  get inFlight(): number {
    return this.sent.size;
  }

  /** Bytes the queued tokens would add to a call's body. */
  get queuedBytes(): number {
    return this.bytes;
  }

  /**
   * Waits for the answer about an unknown token: joins its entry (queuing the token when it is
   * neither queued nor sent), or answers 503 at once when no place is left for the request.
   */
  wait(token: string, signal: AbortSignal | undefined, caller: ValidationCaller): Promise<Verdict> {
    const { limits } = this.options;
    let entry = this.sent.get(token) ?? this.queue.get(token);
    if (entry !== undefined && entry.waiters.size >= limits.maxWaitersPerToken)
      return Promise.resolve(refusedPlace('too many requests wait for this key'));
    this.makeRoomForWaiter(entry);
    if (this.waiterCount >= limits.maxWaiters)
      return Promise.resolve(refusedPlace('too many requests wait for validation'));
    if (entry === undefined) {
      entry = {
        token,
        bytes: Buffer.byteLength(JSON.stringify(token)) + 1,
        sent: false,
        waiters: new Set(),
        callers: new Map(),
      };
      this.queue.set(token, entry);
      this.bytes += entry.bytes;
    }
    const joined = entry;
    const promise = new Promise<Verdict>((resolve) => {
      const onAbort = (): void => {
        if (waiter.entry.waiters.has(waiter)) this.abandoned += 1;
        this.finish(waiter, this.options.unavailable('the client went away'));
      };
      const timer = setTimeout(() => {
        this.shed += 1;
        this.finish(waiter, this.options.unavailable('no answer in time'));
      }, limits.maxWaitMs);
      timer.unref();
      const waiter: Waiter = { entry: joined, caller, resolve, timer, signal, onAbort };
      signal?.addEventListener('abort', onAbort, { once: true });
      joined.waiters.add(waiter);
      joined.callers.set(caller, (joined.callers.get(caller) ?? 0) + 1);
      if (!joined.sent) this.claim(caller, joined);
      this.waiterCount += 1;
    });
    while (this.queue.size > limits.maxQueued) {
      if (!this.shedOne(undefined, 'too many keys wait for validation')) break;
    }
    return promise;
  }

  /**
   * Takes the queued tokens that fit one call's body of `maxBytes` and marks them sent: from the
   * callers in turns (one token of each caller per turn, the newest caller and its newest token
   * first), so a caller of one token is in the next call however many tokens another caller queued.
   */
  send(maxBytes: number): string[] {
    const batch = this.takeBatch(maxBytes);
    for (const entry of batch) {
      this.dequeue(entry);
      entry.sent = true;
      this.sent.set(entry.token, entry);
    }
    return batch.map((e) => e.token);
  }

  /** Answers every request waiting for a sent token; the token is no longer in flight. */
  answer(token: string, verdict: Verdict): void {
    const entry = this.sent.get(token);
    if (entry === undefined) return;
    this.sent.delete(token);
    this.settle(entry, verdict);
  }

  /** Answers every waiting request with `verdict` and empties the queue. */
  close(verdict: Verdict): void {
    for (const entry of [...this.queue.values(), ...this.sent.values()]) this.settle(entry, verdict);
    this.queue.clear();
    this.claims.clear();
    this.bytes = 0;
  }

  private takeBatch(maxBytes: number): Entry[] {
    const { maxBatchTokens } = this.options.limits;
    const batch = new Set<Entry>();
    let bytes = BODY_OVERHEAD - 1;
    const lists = [...this.claims.values()].reverse().map((claimed) => [...claimed].reverse());
    for (let turn = 0; batch.size < maxBatchTokens; turn++) {
      let more = false;
      for (const list of lists) {
        if (turn >= list.length) continue;
        more = true;
        const entry = list[turn];
        if (batch.has(entry)) continue;
        if (batch.size > 0 && bytes + entry.bytes > maxBytes) return [...batch];
        bytes += entry.bytes;
        batch.add(entry);
        if (batch.size >= maxBatchTokens) break;
      }
      if (!more) break;
    }
    return [...batch];
  }

  private claim(caller: ValidationCaller, entry: Entry): void {
    let claimed = this.claims.get(caller);
    if (claimed === undefined) this.claims.set(caller, (claimed = new Set()));
    claimed.delete(entry); // asked about again: the newest again
    claimed.add(entry);
  }

  private unclaim(caller: ValidationCaller, entry: Entry): void {
    const claimed = this.claims.get(caller);
    if (claimed?.delete(entry) && claimed.size === 0) this.claims.delete(caller);
  }

  /** Sheds queued tokens (not `keep`) while every waiter place is taken. */
  private makeRoomForWaiter(keep: Entry | undefined): void {
    while (this.waiterCount >= this.options.limits.maxWaiters) {
      if (!this.shedOne(keep, 'too many requests wait for validation')) return;
    }
  }

  /**
   * The caller holding the most queued tokens (the first to queue among equals) gives up its
   * oldest one (not `keep`): its waiters for it get 503; the token leaves the queue when nobody
   * else waits for it. False when there is nothing to shed.
   */
  private shedOne(keep: Entry | undefined, reason: string): boolean {
    let largest: { caller: ValidationCaller; entry: Entry; size: number } | undefined;
    for (const [caller, claimed] of this.claims) {
      if (largest !== undefined && claimed.size <= largest.size) continue;
      for (const entry of claimed) {
        if (entry === keep) continue;
        largest = { caller, entry, size: claimed.size };
        break;
      }
    }
    if (largest === undefined) return false;
    const { caller, entry } = largest;
    const verdict = refusedPlace(reason);
    for (const waiter of [...entry.waiters]) {
      if (waiter.caller !== caller) continue;
      this.shed += 1;
      this.finish(waiter, verdict);
    }
    return true;
  }

  /** Answers one waiter and forgets it; a queued token nobody waits for any more leaves the queue. */
  private finish(waiter: Waiter, verdict: Verdict): void {
    const { entry, caller } = waiter;
    if (!entry.waiters.delete(waiter)) return;
    this.waiterCount -= 1;
    clearTimeout(waiter.timer);
    waiter.signal?.removeEventListener('abort', waiter.onAbort);
    const left = (entry.callers.get(caller) ?? 1) - 1;
    if (left > 0) entry.callers.set(caller, left);
    else {
      entry.callers.delete(caller);
      this.unclaim(caller, entry);
    }
    if (!entry.sent && entry.waiters.size === 0) this.dequeue(entry);
    waiter.resolve(verdict);
  }

  /** Takes a token out of the queue (and out of its callers' claims). */
  private dequeue(entry: Entry): void {
    if (this.queue.get(entry.token) !== entry) return;
    this.queue.delete(entry.token);
    this.bytes -= entry.bytes;
    for (const caller of entry.callers.keys()) this.unclaim(caller, entry);
  }

  private settle(entry: Entry, verdict: Verdict): void {
    for (const waiter of [...entry.waiters]) this.finish(waiter, verdict);
  }
}

/** The 503 for a request that found no place among the bounded waiters: worth retrying in a second. */
function refusedPlace(reason: string): ValidationUnavailable {
  return new ValidationUnavailable(reason, 1);
}
