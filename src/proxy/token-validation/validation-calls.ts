import type { Logger } from '../../common/logging/logger';
import { RateLimitedLog } from '../../common/logging/rate-limited-log';
import { bodyBytes } from './batches';
import { ValidationCallError, type ValidatedToken, type ValidateTokens } from './validation-client';
import { MIN_BATCH_BYTES } from './validator-limits';

/** Longest wait for an upstream's budget (429) that a call asks for. */
const MAX_PACE_MS = 60_000;

/** What a call learned of one token. */
export type TokenOutcome =
  | { kind: 'accepted'; token: ValidatedToken }
  /** Not among the valid tokens of a 200 answer (remembered), or alone in a body refused with 413 (not). */
  | { kind: 'refused'; remember: boolean }
  /** No answer about it: network error, timeout, 5xx, another status, a garbled body. */
  | { kind: 'failed' };

export interface ValidationCallsOptions {
  readonly validate: ValidateTokens;
  readonly logger: Logger;
  /** The body size batches are cut to at first. */
  readonly maxBatchBytes: number;
  /** Called after every call the upstream answered (200). */
  readonly onAnswer: () => void;
}

/**
 * The validation calls to the upstream: one call per batch, split in halves when the upstream
 * answers 413 (and batches cut smaller from then on), with what the calls' results tell the
 * validator's pacing: failures in a row, and the wait an upstream past its budget (429) asked for.
 */
export class ValidationCalls {
  /** Calls made (unknown tokens and revalidations): for metrics and tests. */
  calls = 0;
  /** Calls by result: answered (200), `too_large` (413, split and asked again), `failed`. */
  readonly results = { answered: 0, too_large: 0, failed: 0 };
  /** Failed calls in a row: they pause the next calls. */
  failures = 0;
  /** The body size batches are cut to; lowered when the upstream answers 413 anyway. */
  batchBytes: number;
  /** Set when the last call was refused for the upstream's budget (429): ms it asked to wait. */
  pacedMs: number | undefined;
  private readonly warnings: RateLimitedLog;
  private closed = false;

  constructor(private readonly options: ValidationCallsOptions) {
    this.batchBytes = options.maxBatchBytes;
    this.warnings = new RateLimitedLog(options.logger, 60_000);
  }

  /** No more halves are asked about once closed. */
  close(): void {
    this.closed = true;
  }

  /**
   * Asks about tokens in one call; when the upstream answers 413 (body too large), in halves, each
   * asked again (a single token refused with 413 is refused, not remembered). Every token asked
   * about gets an outcome.
   */
  async askAll(tokens: readonly string[]): Promise<Map<string, TokenOutcome>> {
    const outcomes = new Map<string, TokenOutcome>();
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
      this.results.answered += 1;
      this.options.onAnswer();
      return new Map(confirmed.filter((t) => asked.has(t.token)).map((t) => [t.token, t]));
    } catch (err) {
      if (err instanceof ValidationCallError && err.status === 413) {
        this.results.too_large += 1;
        this.warnings.warn(
          `upstream token validation refused a body of ${bodyBytes(tokens)} bytes (413); asking in smaller batches`,
          'too-large',
        );
        return 'too large';
      }
      this.results.failed += 1;
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
}
