import type { Logger } from '../../common/logging/logger';
import { RateLimitedLog } from '../../common/logging/rate-limited-log';
import type { StoredToken } from '../backup/stored-tokens';
import { KeptTokens } from './kept-tokens';
import { ValidationCallError, type ValidatedToken, type ValidateTokens } from './validation-client';
import { ValidationUnavailable } from './validation-unavailable';
import { timerDelay } from '../../common/timers/timer-delay';
import { batchesOf, BODY_OVERHEAD, bodyBytes } from './batches';
import { DEFAULT_VALIDATOR_LIMITS, MIN_BATCH_BYTES, type TokenValidatorLimits } from './validator-limits';

export { DEFAULT_VALIDATOR_LIMITS, type TokenValidatorLimits } from './validator-limits';

/** Longest wait for an upstream's budget (429) within a revalidation round, and how many per batch. */
const MAX_PACE_MS = 60_000;
const MAX_PACES_PER_BATCH = 5;

/** What a request learns: the upstream's confirmation, `null` for a refusal, or a 503 to send. */
export type Verdict = ValidatedToken | null | ValidationUnavailable;

export interface TokenValidatorOptions {
  validate: ValidateTokens;
  /** Milliseconds between revalidations of accepted tokens; also how long a refusal is remembered. */
  revalidateIntervalMs: number;
  logger: Logger;
  limits?: Partial<TokenValidatorLimits>;
}

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

/** What a call learned of one token. */
type Outcome =
  | { kind: 'accepted'; token: ValidatedToken }
  /** Not among the valid tokens of a 200 answer (remembered), or alone in a body refused with 413 (not). */
  | { kind: 'refused'; remember: boolean }
  /** No answer about it: network error, timeout, 5xx, another status, a garbled body. */
  | { kind: 'failed' };

/**
 * The upstream's word on tokens nobody configured, remembered: accepted tokens (revalidated every
 * interval, dropped once the upstream stops confirming them) and refused ones (for one interval),
 * both bounded. Unknown tokens are queued (bounded; when full, the caller holding the most queued
 * tokens gives up its oldest, so one request's tokens never push out another caller's key) and
 * asked about in batches sized in bytes and tokens, the callers' tokens taken in turns, newest
 * caller and newest token first (LIFO), one call at a time (a second only while a whole batch
 * waits), spaced, so a flood of distinct wrong tokens costs the upstream a bounded number of calls
 * and a fresh token is still asked about in the next one. Only what the
 * upstream answered is remembered: a token it could not answer about (or that found no place among
 * the bounded waiters) gets a 503 with `Retry-After`, never a refusal.
 */
export class TokenValidator {
  private readonly limits: TokenValidatorLimits;
  private readonly accepted = new Map<string, ValidatedToken>();
  /** What survives a restart in the definitions backup (`kept-tokens.ts`). */
  private readonly kept = new KeptTokens();
  /** Token → epoch ms until which it stays refused. */
  private readonly refused = new Map<string, number>();
  /** Tokens waiting to be sent. */
  private readonly queue = new Map<string, Entry>();
  /** The queued tokens each caller waits for, oldest first; callers in the order they first queued. */
  private readonly claims = new Map<ValidationCaller, Set<Entry>>();
  /** Tokens whose call is in flight. */
  private readonly sent = new Map<string, Entry>();
  private waiterCount = 0;
  /** Bytes the queued tokens would add to a call's body. */
  private queuedBytes = 0;
  private callsInFlight = 0;
  private timer: NodeJS.Timeout | undefined;
  private lastCallAt = 0;
  /** Failed calls in a row: they pause the next calls (doubling up to `maxBackoffMs`). */
  private failures = 0;
  /** The body size batches are cut to; lowered when the upstream answers 413 anyway. */
  private batchBytes: number;
  private readonly revalidation: NodeJS.Timeout;
  private readonly warnings: RateLimitedLog;
  private closed = false;
  private revalidating = false;
  /** Set when the last call was refused for the upstream's budget (429): ms it asked to wait. */
  private pacedMs: number | undefined;
  /** Validation calls made (unknown tokens and revalidations): for metrics and tests. */
  calls = 0;
  /** Calls by result: answered (200), `too_large` (413, split and asked again), `failed`. */
  readonly callResults = { answered: 0, too_large: 0, failed: 0 };
  /** Requests answered 503 because of a bound (queue, waiters, wait time) rather than the upstream. */
  shed = 0;
  /** Requests that stopped waiting because their client went. */
  abandoned = 0;

  constructor(private readonly options: TokenValidatorOptions) {
    this.limits = { ...DEFAULT_VALIDATOR_LIMITS, ...options.limits };
    this.batchBytes = this.limits.maxBatchBytes;
    this.warnings = new RateLimitedLog(options.logger, 60_000);
    this.revalidation = setInterval(() => void this.revalidate(), timerDelay(options.revalidateIntervalMs));
    this.revalidation.unref();
  }

  /** Requests waiting for an answer. */
  get waiters(): number {
    return this.waiterCount;
  }

  /** Unknown tokens waiting to be asked about (queued) or being asked about (sent). */
  get pendingTokens(): { queued: number; sent: number } {
    return { queued: this.queue.size, sent: this.sent.size };
  }

  get inFlight(): number {
    return this.callsInFlight;
  }

  /** The tokens the upstream accepted and that are remembered now, oldest first (for `/internal-backstage/tokens`). */
  acceptedTokens(): ValidatedToken[] {
    return [...this.accepted.values()];
  }

  /** How many refused tokens are remembered now. */
  get refusedCount(): number {
    return this.refused.size;
  }

  /** What is known without asking: the upstream's answer, `null` for a remembered refusal, undefined when unknown. */
  known(token: string): ValidatedToken | null | undefined {
    const accepted = this.accepted.get(token);
    if (accepted) return accepted;
    const until = this.refused.get(token);
    if (until === undefined) return this.restoredAccepted(token);
    if (until > Date.now()) return null;
    this.refused.delete(token);
    return this.restoredAccepted(token);
  }

  /** Seeds tokens a backup kept as validated (digests): keys among them are accepted until the upstream answers. */
  seedAccepted(tokens: readonly StoredToken[]): void {
    this.kept.seed(tokens);
  }

  /** The accepted tokens (and those restored, not presented yet) as a backup keeps them: digests, never secrets. */
  keptTokens(): StoredToken[] {
    return this.kept.list(this.accepted);
  }

  /** `listener` is called whenever `keptTokens` may have changed. */
  onKeptTokensChange(listener: () => void): void {
    this.kept.onChange(listener);
  }

  /** A key a backup held as validated, accepted with the stored scope. */
  private restoredAccepted(token: string): ValidatedToken | undefined {
    const restored = this.kept.take(token);
    if (restored === undefined) return undefined;
    this.accepted.set(token, restored);
    if (this.accepted.size > this.limits.maxAccepted) this.forgetOldest(this.accepted);
    return restored;
  }

  /**
   * The upstream's answer about a token, asked in a batch when unknown: the confirmation, `null`
   * when refused, or a `ValidationUnavailable` (503). `signal` aborts the wait (the client went):
   * the request stops being waited for, and a queued token nobody waits for any more is dropped.
   * `caller`: the caller the request belongs to (one `/edge/validate` request for all its tokens);
   * by default the request is a caller of its own.
   */
  check(token: string, signal?: AbortSignal, caller = new ValidationCaller()): Promise<Verdict> {
    const known = this.known(token);
    if (known !== undefined) return Promise.resolve(known);
    if (this.closed) return Promise.resolve(this.unavailable('flags-proxy is shutting down'));
    if (signal?.aborted) return Promise.resolve(this.unavailable('the client went away'));
    let entry = this.sent.get(token) ?? this.queue.get(token);
    if (entry !== undefined && entry.waiters.size >= this.limits.maxWaitersPerToken)
      return Promise.resolve(this.refusedPlace('too many requests wait for this key'));
    this.makeRoomForWaiter(entry);
    if (this.waiterCount >= this.limits.maxWaiters)
      return Promise.resolve(this.refusedPlace('too many requests wait for validation'));
    if (entry === undefined) {
      entry = {
        token,
        bytes: Buffer.byteLength(JSON.stringify(token)) + 1,
        sent: false,
        waiters: new Set(),
        callers: new Map(),
      };
      this.queue.set(token, entry);
      this.queuedBytes += entry.bytes;
    }
    const joined = entry;
    const promise = new Promise<Verdict>((resolve) => {
      const onAbort = (): void => {
        if (waiter.entry.waiters.has(waiter)) this.abandoned += 1;
        this.finish(waiter, this.unavailable('the client went away'));
      };
      const timer = setTimeout(() => {
        this.shed += 1;
        this.finish(waiter, this.unavailable('no answer in time'));
      }, this.limits.maxWaitMs);
      timer.unref();
      const waiter: Waiter = { entry: joined, caller, resolve, timer, signal, onAbort };
      signal?.addEventListener('abort', onAbort, { once: true });
      joined.waiters.add(waiter);
      joined.callers.set(caller, (joined.callers.get(caller) ?? 0) + 1);
      if (!joined.sent) this.claim(caller, joined);
      this.waiterCount += 1;
    });
    while (this.queue.size > this.limits.maxQueued) {
      if (!this.shedOne(undefined, 'too many keys wait for validation')) break;
    }
    this.schedule();
    return promise;
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
    while (this.waiterCount >= this.limits.maxWaiters) {
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
    const verdict = this.refusedPlace(reason);
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
    this.queuedBytes -= entry.bytes;
    for (const caller of entry.callers.keys()) this.unclaim(caller, entry);
  }

  /**
   * Whether a call may start: one at a time, and a second (up to `maxCallsInFlight`) only for a
   * queue that fills a whole batch (a flood, or a slow call), so batches stay full.
   */
  private mayCall(): boolean {
    if (this.closed || this.queue.size === 0) return false;
    if (this.callsInFlight === 0) return true;
    if (this.callsInFlight >= this.limits.maxCallsInFlight) return false;
    return this.queue.size >= this.limits.maxBatchTokens || this.queuedBytes >= this.batchBytes;
  }

  private settle(entry: Entry, verdict: Verdict): void {
    for (const waiter of [...entry.waiters]) this.finish(waiter, verdict);
  }

  private unavailable(reason: string): ValidationUnavailable {
    return new ValidationUnavailable(reason, Math.max(1, Math.ceil(this.backoffMs() / 1000)));
  }

  private refusedPlace(reason: string): ValidationUnavailable {
    return new ValidationUnavailable(reason, 1);
  }

  /** The pause before the next call: `minSpacingMs`, doubled per failed call in a row, capped. */
  private backoffMs(): number {
    if (this.failures === 0) return this.limits.minSpacingMs;
    const doubled = this.limits.minSpacingMs * 2 ** Math.min(this.failures, 16);
    return Math.min(this.limits.maxBackoffMs, doubled);
  }

  private schedule(): void {
    if (this.timer !== undefined || !this.mayCall()) return;
    const wait = Math.max(0, this.lastCallAt + this.backoffMs() - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, wait);
  }

  /**
   * Queued tokens that fit one call's body, taken from the callers in turns (one token of each
   * caller per turn, the newest caller and its newest token first): a caller of one token is in
   * the next call however many tokens another caller queued.
   */
  private takeBatch(): Entry[] {
    const batch = new Set<Entry>();
    let bytes = BODY_OVERHEAD - 1;
    const lists = [...this.claims.values()].reverse().map((claimed) => [...claimed].reverse());
    for (let turn = 0; batch.size < this.limits.maxBatchTokens; turn++) {
      let more = false;
      for (const list of lists) {
        if (turn >= list.length) continue;
        more = true;
        const entry = list[turn];
        if (batch.has(entry)) continue;
        if (batch.size > 0 && bytes + entry.bytes > this.batchBytes) return [...batch];
        bytes += entry.bytes;
        batch.add(entry);
        if (batch.size >= this.limits.maxBatchTokens) break;
      }
      if (!more) break;
    }
    return [...batch];
  }

  private async flush(): Promise<void> {
    if (!this.mayCall()) return;
    const batch = this.takeBatch();
    for (const entry of batch) {
      this.dequeue(entry);
      entry.sent = true;
      this.sent.set(entry.token, entry);
    }
    this.callsInFlight += 1;
    this.lastCallAt = Date.now();
    this.schedule(); // another call may start after the spacing, while this one is in flight
    const outcomes = await this.askAll(batch.map((e) => e.token));
    this.callsInFlight -= 1;
    for (const entry of batch) {
      this.sent.delete(entry.token);
      const outcome = outcomes.get(entry.token) ?? { kind: 'failed' };
      if (outcome.kind === 'accepted') {
        this.accept(outcome.token);
        this.settle(entry, outcome.token);
      } else if (outcome.kind === 'refused') {
        if (outcome.remember) this.refuse(entry.token);
        this.settle(entry, null);
      } else {
        this.settle(entry, this.unavailable('the upstream did not answer'));
      }
    }
    this.schedule();
  }

  /**
   * Asks about tokens in one call; when the upstream answers 413 (body too large), in halves, each
   * asked again (a single token refused with 413 is refused, not remembered). Every token asked
   * about gets an outcome.
   */
  private async askAll(tokens: readonly string[]): Promise<Map<string, Outcome>> {
    const outcomes = new Map<string, Outcome>();
    const answer = await this.ask(tokens);
    if (answer instanceof Map) {
      this.failures = 0;
      for (const token of tokens) {
        const confirmed = answer.get(token);
        outcomes.set(
          token,
          confirmed ? { kind: 'accepted', token: confirmed } : { kind: 'refused', remember: true },
        );
      }
      return outcomes;
    }
    if (answer === 'too large') {
      if (tokens.length === 1) {
        outcomes.set(tokens[0], { kind: 'refused', remember: false });
        return outcomes;
      }
      const bytes = bodyBytes(tokens);
      this.batchBytes = Math.max(MIN_BATCH_BYTES, Math.min(this.batchBytes, Math.floor(bytes / 2)));
      const half = Math.ceil(tokens.length / 2);
      for (const part of [tokens.slice(0, half), tokens.slice(half)]) {
        if (this.closed) break;
        for (const [token, outcome] of await this.askAll(part)) outcomes.set(token, outcome);
      }
      return outcomes;
    }
    this.failures += 1;
    for (const token of tokens) outcomes.set(token, { kind: 'failed' });
    return outcomes;
  }

  /** One validation call: the confirmed tokens, `too large` for a 413, `failed` without an answer. */
  private async ask(
    tokens: readonly string[],
  ): Promise<Map<string, ValidatedToken> | 'too large' | 'failed'> {
    this.calls += 1;
    this.pacedMs = undefined;
    try {
      const confirmed = await this.options.validate(tokens);
      const asked = new Set(tokens);
      this.callResults.answered += 1;
      // the upstream answers again: keys accepted from a backup are asked about now
      if (this.kept.answered()) setImmediate(() => void this.revalidate());
      return new Map(confirmed.filter((t) => asked.has(t.token)).map((t) => [t.token, t]));
    } catch (err) {
      if (err instanceof ValidationCallError && err.status === 413) {
        this.callResults.too_large += 1;
        this.warnings.warn(
          `upstream token validation refused a body of ${bodyBytes(tokens)} bytes (413); asking in smaller batches`,
          'too-large',
        );
        return 'too large';
      }
      this.callResults.failed += 1;
      if (err instanceof ValidationCallError && err.status === 429)
        this.pacedMs = Math.min(MAX_PACE_MS, Math.max(1, err.retryAfterSeconds ?? 1) * 1000);
      const message = err instanceof Error ? err.message : String(err);
      this.warnings.warn(
        `upstream token validation failed; the keys asked about get 503 and stay unknown: ${message}`,
        'ask',
      );
      return 'failed';
    }
  }

  private accept(token: ValidatedToken): void {
    this.refused.delete(token.token);
    this.accepted.delete(token.token);
    this.accepted.set(token.token, token);
    if (this.accepted.size > this.limits.maxAccepted) this.forgetOldest(this.accepted);
    this.kept.confirmed(token.token);
  }

  private refuse(token: string): void {
    this.accepted.delete(token);
    this.refused.delete(token);
    this.refused.set(token, Date.now() + this.options.revalidateIntervalMs);
    this.kept.refused(token);
    if (this.refused.size > this.limits.maxRefused) this.forgetOldest(this.refused);
  }

  private forgetOldest(map: Map<string, unknown>): void {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }

  /**
   * Asks again about every accepted token: those the upstream no longer confirms are refused from
   * then on. When the upstream cannot answer, the round stops and accepted tokens stay accepted
   * until the next round.
   */
  async revalidate(): Promise<void> {
    if (this.revalidating) return; // a slow upstream: one round at a time
    this.revalidating = true;
    try {
      for (const batch of batchesOf([...this.accepted.keys()], this.limits.maxBatchTokens, this.batchBytes)) {
        if (this.closed) break;
        let outcomes = await this.askAll(batch);
        // an upstream of ours past its budget for this address (429): wait as asked, then again
        for (let paces = 0; this.pacedMs !== undefined && paces < MAX_PACES_PER_BATCH; paces++) {
          await new Promise((resolve) => setTimeout(resolve, this.pacedMs).unref());
          if (this.closed) break;
          outcomes = await this.askAll(batch);
        }
        if (batch.some((token) => outcomes.get(token)?.kind === 'failed')) break; // again next round
        for (const token of batch) {
          const outcome = outcomes.get(token);
          if (outcome?.kind === 'accepted') {
            if (this.accepted.has(token)) {
              this.accepted.set(token, outcome.token);
              this.kept.confirmed(token);
            }
          } else if (outcome?.kind === 'refused' && outcome.remember) this.refuse(token);
        }
      }
    } finally {
      this.revalidating = false;
    }
  }

  close(): void {
    this.closed = true;
    clearInterval(this.revalidation);
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const closing = this.unavailable('flags-proxy is shutting down');
    for (const entry of [...this.queue.values(), ...this.sent.values()]) this.settle(entry, closing);
    this.queue.clear();
    this.claims.clear();
    this.queuedBytes = 0;
  }
}
