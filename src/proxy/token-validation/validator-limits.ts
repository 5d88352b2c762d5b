/** The bounds of the token validator: what it remembers, queues and sends. */
export interface TokenValidatorLimits {
  /** Tokens remembered as accepted; beyond this the oldest is forgotten (and asked about again when seen). */
  maxAccepted: number;
  /** Tokens remembered as refused; beyond this the oldest is forgotten. */
  maxRefused: number;
  /** Unknown tokens waiting to be sent; a new one beyond this sheds the oldest waiting (503). */
  maxQueued: number;
  /** Tokens in one validation call. */
  maxBatchTokens: number;
  /** Bytes of one validation call's JSON body (Unleash refuses bodies over 100 KB with 413). */
  maxBatchBytes: number;
  /** Validation calls of unknown tokens at once. */
  maxCallsInFlight: number;
  /** Least time between the starts of two validation calls of unknown tokens. */
  minSpacingMs: number;
  /** Requests waiting for one token's answer; beyond this a request gets 503 at once. */
  maxWaitersPerToken: number;
  /** Requests waiting for any answer; beyond this the oldest waiting tokens are shed, else 503. */
  maxWaiters: number;
  /** Longest a request waits for an answer before it gets 503. */
  maxWaitMs: number;
  /** Longest pause of validation calls after failed ones (doubling from `minSpacingMs`). */
  maxBackoffMs: number;
}

export const DEFAULT_VALIDATOR_LIMITS: TokenValidatorLimits = {
  maxAccepted: 10_000,
  maxRefused: 10_000,
  maxQueued: 1_000,
  maxBatchTokens: 200,
  maxBatchBytes: 96 * 1024,
  maxCallsInFlight: 2,
  minSpacingMs: 100,
  maxWaitersPerToken: 500,
  maxWaiters: 4_000,
  maxWaitMs: 5_000,
  maxBackoffMs: 5_000,
};

/** The smallest body size the validator shrinks its batches to after 413 answers. */
export const MIN_BATCH_BYTES = 4 * 1024;
