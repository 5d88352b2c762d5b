import type { Logger } from '../../common/logging/logger';
import { timerDelay } from '../../common/timers/timer-delay';
import type { StoredToken } from '../backup/stored-tokens';
import { batchesOf } from './batches';
import { RememberedTokens } from './remembered-tokens';
import { ValidationCalls } from './validation-calls';
import type { ValidatedToken, ValidateTokens } from './validation-client';
import { ValidationUnavailable } from './validation-unavailable';
import { DEFAULT_VALIDATOR_LIMITS, type TokenValidatorLimits } from './validator-limits';
import { ValidationCaller, WaitingTokens, type Verdict } from './waiting-tokens';

export { DEFAULT_VALIDATOR_LIMITS, type TokenValidatorLimits } from './validator-limits';
export type { Verdict } from './waiting-tokens';

/** How many times a revalidation round waits for an upstream's budget (429) per batch. */
const MAX_PACES_PER_BATCH = 5;

export interface TokenValidatorOptions {
  validate: ValidateTokens;
  /** Milliseconds between revalidations of accepted tokens; also how long a refusal is remembered. */
  revalidateIntervalMs: number;
  logger: Logger;
  limits?: Partial<TokenValidatorLimits>;
}

/**
 * The upstream's word on tokens nobody configured, remembered (`remembered-tokens.ts`): accepted
 * tokens (revalidated every interval, dropped once the upstream stops confirming them) and refused
 * ones (for one interval), both bounded. Unknown tokens wait in a bounded queue, fair between
 * callers (`waiting-tokens.ts`), and are asked about in batches sized in bytes and tokens
 * (`validation-calls.ts`), one call at a time (a second only while a whole batch waits), spaced,
 * so a flood of distinct wrong tokens costs the upstream a bounded number of calls and a fresh
 * token is still asked about in the next one. Only what the upstream answered is remembered: a
 * token it could not answer about (or that found no place among the bounded waiters) gets a 503
 * with `Retry-After`, never a refusal.
 */
export class TokenValidator {
  private readonly limits: TokenValidatorLimits;
  private readonly remembered: RememberedTokens;
  private readonly waiting: WaitingTokens;
  private readonly asking: ValidationCalls;
  private callsInFlight = 0;
  private timer: NodeJS.Timeout | undefined;
  private lastCallAt = 0;
  private readonly revalidation: NodeJS.Timeout;
  private closed = false;
  private revalidating = false;

  constructor(options: TokenValidatorOptions) {
    this.limits = { ...DEFAULT_VALIDATOR_LIMITS, ...options.limits };
    this.remembered = new RememberedTokens(this.limits, options.revalidateIntervalMs);
    this.waiting = new WaitingTokens({
      limits: this.limits,
      unavailable: (reason) => this.unavailable(reason),
    });
    this.asking = new ValidationCalls({
      validate: options.validate,
      logger: options.logger,
      maxBatchBytes: this.limits.maxBatchBytes,
      // the upstream answers again: keys accepted from a backup are asked about now
      onAnswer: () => {
        if (this.remembered.upstreamAnswered()) setImmediate(() => void this.revalidate());
      },
    });
    this.revalidation = setInterval(() => void this.revalidate(), timerDelay(options.revalidateIntervalMs));
    this.revalidation.unref();
  }

  /** Validation calls made (unknown tokens and revalidations): for metrics and tests. */
  get calls(): number {
    return this.asking.calls;
  }

  /** Calls by result: answered (200), `too_large` (413, split and asked again), `failed`. */
  get callResults(): { readonly answered: number; readonly too_large: number; readonly failed: number } {
    return this.asking.results;
  }

  /** Requests answered 503 because of a bound (queue, waiters, wait time) rather than the upstream. */
  get shed(): number {
    return this.waiting.shed;
  }

  /** Requests that stopped waiting because their client went. */
  get abandoned(): number {
    return this.waiting.abandoned;
  }

  /** Requests waiting for an answer. */
  get waiters(): number {
    return this.waiting.waiters;
  }

  /** Unknown tokens waiting to be asked about (queued) or being asked about (sent). */
  get pendingTokens(): { queued: number; sent: number } {
    return { queued: this.waiting.queued, sent: this.waiting.inFlight };
  }

  get inFlight(): number {
    return this.callsInFlight;
  }

  /** The tokens the upstream accepted and that are remembered now, oldest first (for `/internal-backstage/tokens`). */
  acceptedTokens(): ValidatedToken[] {
    return this.remembered.acceptedTokens();
  }

  /** How many refused tokens are remembered now. */
  get refusedCount(): number {
    return this.remembered.refusedCount;
  }

  /** What is known without asking: the upstream's answer, `null` for a remembered refusal, undefined when unknown. */
  known(token: string): ValidatedToken | null | undefined {
    return this.remembered.known(token);
  }

  /** Seeds tokens a backup kept as validated (digests): keys among them are accepted until the upstream answers. */
  seedAccepted(tokens: readonly StoredToken[]): void {
    this.remembered.seed(tokens);
  }

  /** The accepted tokens (and those restored, not presented yet) as a backup keeps them: digests, never secrets. */
  keptTokens(): StoredToken[] {
    return this.remembered.keptTokens();
  }

  /** `listener` is called whenever `keptTokens` may have changed. */
  onKeptTokensChange(listener: () => void): void {
    this.remembered.onKeptTokensChange(listener);
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
    const verdict = this.waiting.wait(token, signal, caller);
    this.schedule();
    return verdict;
  }

  /**
   * Whether a call may start: one at a time, and a second (up to `maxCallsInFlight`) only for a
   * queue that fills a whole batch (a flood, or a slow call), so batches stay full.
   */
  private mayCall(): boolean {
    if (this.closed || this.waiting.queued === 0) return false;
    if (this.callsInFlight === 0) return true;
    if (this.callsInFlight >= this.limits.maxCallsInFlight) return false;
    return (
      this.waiting.queued >= this.limits.maxBatchTokens || this.waiting.queuedBytes >= this.asking.batchBytes
    );
  }

  private unavailable(reason: string): ValidationUnavailable {
    return new ValidationUnavailable(reason, Math.max(1, Math.ceil(this.backoffMs() / 1000)));
  }

  /** The pause before the next call: `minSpacingMs`, doubled per failed call in a row, capped. */
  private backoffMs(): number {
    const { failures } = this.asking;
    if (failures === 0) return this.limits.minSpacingMs;
    const doubled = this.limits.minSpacingMs * 2 ** Math.min(failures, 16);
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

  private async flush(): Promise<void> {
    if (!this.mayCall()) return;
    const batch = this.waiting.send(this.asking.batchBytes);
    this.callsInFlight += 1;
    this.lastCallAt = Date.now();
    this.schedule(); // another call may start after the spacing, while this one is in flight
    const outcomes = await this.asking.askAll(batch);
    this.callsInFlight -= 1;
    for (const token of batch) {
      const outcome = outcomes.get(token) ?? { kind: 'failed' };
      if (outcome.kind === 'accepted') {
        this.remembered.accept(outcome.token);
        this.waiting.answer(token, outcome.token);
      } else if (outcome.kind === 'refused') {
        if (outcome.remember) this.remembered.refuse(token);
        this.waiting.answer(token, null);
      } else {
        this.waiting.answer(token, this.unavailable('the upstream did not answer'));
      }
    }
    this.schedule();
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
      const accepted = this.remembered.acceptedKeys();
      for (const batch of batchesOf(accepted, this.limits.maxBatchTokens, this.asking.batchBytes)) {
        if (this.closed) break;
        let outcomes = await this.asking.askAll(batch);
        // an upstream of ours past its budget for this address (429): wait as asked, then again
        for (let paces = 0; this.asking.pacedMs !== undefined && paces < MAX_PACES_PER_BATCH; paces++) {
          await new Promise((resolve) => setTimeout(resolve, this.asking.pacedMs).unref());
          if (this.closed) break;
          outcomes = await this.asking.askAll(batch);
        }
        if (batch.some((token) => outcomes.get(token)?.kind === 'failed')) break; // again next round
        for (const token of batch) {
          const outcome = outcomes.get(token);
          if (outcome?.kind === 'accepted') this.remembered.confirmAgain(outcome.token);
          else if (outcome?.kind === 'refused' && outcome.remember) this.remembered.refuse(token);
        }
      }
    } finally {
      this.revalidating = false;
    }
  }

  close(): void {
    this.closed = true;
    this.asking.close();
    clearInterval(this.revalidation);
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.waiting.close(this.unavailable('flags-proxy is shutting down'));
  }
}
