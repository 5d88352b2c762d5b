import type { Logger } from '../../common/logging/logger';
import { RateLimitedLog } from '../../common/logging/rate-limited-log';
import type { ValidatedToken, ValidateTokens } from './validation-client';

export interface TokenValidatorLimits {
  /** Tokens remembered as accepted; beyond this the oldest is forgotten (and asked about again when seen). */
  maxAccepted: number;
  /** Tokens remembered as refused; beyond this the oldest is forgotten. */
  maxRefused: number;
  /** Unknown tokens waiting for a validation call; beyond this a new one is refused without asking. */
  maxPending: number;
  /** Tokens in one validation call. */
  batchSize: number;
  /** Least time between two validation calls of unknown tokens: the bound of calls a flood can cause. */
  minSpacingMs: number;
  /** How long a token is refused when the upstream could not answer (a 404, 5xx, a garbled body). */
  failureMemoryMs: number;
}

export const DEFAULT_VALIDATOR_LIMITS: TokenValidatorLimits = {
  maxAccepted: 10_000,
  maxRefused: 10_000,
  maxPending: 1_000,
  batchSize: 250,
  minSpacingMs: 100,
  failureMemoryMs: 5_000,
};

export interface TokenValidatorOptions {
  validate: ValidateTokens;
  /** Milliseconds between revalidations of accepted tokens; also how long a refusal is remembered. */
  revalidateIntervalMs: number;
  logger: Logger;
  limits?: Partial<TokenValidatorLimits>;
}

interface Waiting {
  readonly resolve: (token: ValidatedToken | undefined) => void;
}

/**
 * The upstream's word on tokens nobody configured, remembered: accepted tokens (revalidated every
 * interval, dropped once the upstream stops confirming them) and refused ones (for one interval),
 * both bounded. Unknown tokens arriving together are asked about in one call, and calls are spaced,
 * so a flood of distinct wrong tokens costs the upstream a bounded number of calls. An upstream that
 * cannot answer refuses (briefly remembered), never fails the request.
 */
export class TokenValidator {
  private readonly limits: TokenValidatorLimits;
  private readonly accepted = new Map<string, ValidatedToken>();
  /** Token → epoch ms until which it stays refused. */
  private readonly refused = new Map<string, number>();
  private readonly pending = new Map<string, Waiting[]>();
  private inFlight = false;
  private timer: NodeJS.Timeout | undefined;
  private lastCallAt = 0;
  private readonly revalidation: NodeJS.Timeout;
  private readonly warnings: RateLimitedLog;
  private closed = false;
  private revalidating = false;
  /** Validation calls made (unknown tokens and revalidations): for metrics and tests. */
  calls = 0;

  constructor(private readonly options: TokenValidatorOptions) {
    this.limits = { ...DEFAULT_VALIDATOR_LIMITS, ...options.limits };
    this.warnings = new RateLimitedLog(options.logger, 60_000);
    this.revalidation = setInterval(() => void this.revalidate(), options.revalidateIntervalMs);
    this.revalidation.unref();
  }

  /** What is known without asking: the upstream's answer, `null` for a remembered refusal, undefined when unknown. */
  known(token: string): ValidatedToken | null | undefined {
    const accepted = this.accepted.get(token);
    if (accepted) return accepted;
    const until = this.refused.get(token);
    if (until === undefined) return undefined;
    if (until > Date.now()) return null;
    this.refused.delete(token);
    return undefined;
  }

  /** The upstream's answer about a token (asked in a batch when unknown); undefined when refused. */
  async check(token: string): Promise<ValidatedToken | undefined> {
    const known = this.known(token);
    if (known !== undefined) return known ?? undefined;
    if (this.closed) return undefined;
    const waiting = this.pending.get(token);
    if (waiting === undefined && this.pending.size >= this.limits.maxPending) return undefined;
    return new Promise((resolve) => {
      if (waiting) waiting.push({ resolve });
      else this.pending.set(token, [{ resolve }]);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.inFlight || this.timer !== undefined || this.pending.size === 0) return;
    const wait = Math.max(0, this.lastCallAt + this.limits.minSpacingMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, wait);
  }

  private async flush(): Promise<void> {
    const batch = [...this.pending.keys()].slice(0, this.limits.batchSize);
    const waiting = batch.map((token) => {
      const list = this.pending.get(token) ?? [];
      this.pending.delete(token);
      return list;
    });
    this.inFlight = true;
    const answer = await this.ask(batch);
    this.inFlight = false;
    batch.forEach((token, i) => {
      const confirmed = answer?.get(token);
      if (confirmed) this.accept(confirmed);
      else this.refuse(token, answer === undefined ? this.limits.failureMemoryMs : undefined);
      for (const w of waiting[i]) w.resolve(confirmed);
    });
    this.schedule();
  }

  /** One validation call; undefined when the upstream could not answer. */
  private async ask(tokens: readonly string[]): Promise<Map<string, ValidatedToken> | undefined> {
    this.lastCallAt = Date.now();
    this.calls += 1;
    try {
      const confirmed = await this.options.validate(tokens);
      const asked = new Set(tokens);
      return new Map(confirmed.filter((t) => asked.has(t.token)).map((t) => [t.token, t]));
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.warnings.warn(
        `upstream token validation failed; refusing the tokens asked about: ${message}`,
        'ask',
      );
      return undefined;
    }
  }

  private accept(token: ValidatedToken): void {
    this.refused.delete(token.token);
    this.accepted.delete(token.token);
    this.accepted.set(token.token, token);
    if (this.accepted.size > this.limits.maxAccepted) this.forgetOldest(this.accepted);
  }

  private refuse(token: string, forMs = this.options.revalidateIntervalMs): void {
    this.accepted.delete(token);
    this.refused.delete(token);
    this.refused.set(token, Date.now() + forMs);
    if (this.refused.size > this.limits.maxRefused) this.forgetOldest(this.refused);
  }

  private forgetOldest(map: Map<string, unknown>): void {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }

  /**
   * Asks again about every accepted token: those the upstream no longer confirms are refused from
   * then on. When the upstream cannot answer, accepted tokens stay accepted until the next round.
   */
  async revalidate(): Promise<void> {
    if (this.revalidating) return; // a slow upstream: one round at a time
    this.revalidating = true;
    try {
      const tokens = [...this.accepted.keys()];
      for (let i = 0; i < tokens.length && !this.closed; i += this.limits.batchSize) {
        const batch = tokens.slice(i, i + this.limits.batchSize);
        const answer = await this.ask(batch);
        if (answer === undefined) continue;
        for (const token of batch) {
          const confirmed = answer.get(token);
          if (confirmed) {
            if (this.accepted.has(token)) this.accepted.set(token, confirmed);
          } else this.refuse(token);
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
    for (const list of this.pending.values()) for (const w of list) w.resolve(undefined);
    this.pending.clear();
  }
}
