import type { StoredToken } from '../backup/stored-tokens';
import { KeptTokens } from './kept-tokens';
import type { ValidatedToken } from './validation-client';
import type { TokenValidatorLimits } from './validator-limits';

/**
 * The upstream's word on tokens, remembered and bounded: accepted tokens (oldest first, until the
 * upstream stops confirming them) and refused ones (for `refusalMs`), plus the tokens a backup
 * kept as validated (`kept-tokens.ts`), which accept a key whose digest they hold until the
 * upstream answers.
 */
export class RememberedTokens {
  private readonly accepted = new Map<string, ValidatedToken>();
  /** What survives a restart in the definitions backup. */
  private readonly kept = new KeptTokens();
  /** Token → epoch ms until which it stays refused. */
  private readonly refused = new Map<string, number>();

  constructor(
    private readonly limits: Pick<TokenValidatorLimits, 'maxAccepted' | 'maxRefused'>,
    /** How long a refusal is remembered. */
    private readonly refusalMs: number,
  ) {}

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

  /** The accepted tokens, oldest first. */
  acceptedTokens(): ValidatedToken[] {
    return [...this.accepted.values()];
  }

  /** The accepted tokens' secrets, oldest first: what a revalidation round asks about. */
  acceptedKeys(): string[] {
    return [...this.accepted.keys()];
  }

  get refusedCount(): number {
    return this.refused.size;
  }

  /** Seeds tokens a backup kept as validated (digests). */
  seed(tokens: readonly StoredToken[]): void {
    this.kept.seed(tokens);
  }

  /** The accepted tokens (and those restored, not presented yet) as a backup keeps them: digests, never secrets. */
  keptTokens(): StoredToken[] {
    return this.kept.list(this.accepted);
  }

  onKeptTokensChange(listener: () => void): void {
    this.kept.onChange(listener);
  }

  /** Records that the upstream answered; true the first time after tokens were restored from a backup. */
  upstreamAnswered(): boolean {
    return this.kept.answered();
  }

  /** A token the upstream accepted when asked about it (newest from now on). */
  accept(token: ValidatedToken): void {
    this.refused.delete(token.token);
    this.accepted.delete(token.token);
    this.accepted.set(token.token, token);
    if (this.accepted.size > this.limits.maxAccepted) forgetOldest(this.accepted);
    this.kept.confirmed(token.token);
  }

  /** A revalidation's confirmation of a token still accepted (its place in the order kept). */
  confirmAgain(token: ValidatedToken): void {
    if (!this.accepted.has(token.token)) return;
    this.accepted.set(token.token, token);
    this.kept.confirmed(token.token);
  }

  /** A token the upstream refused in a 200 answer: refused for `refusalMs`. */
  refuse(token: string): void {
    this.accepted.delete(token);
    this.refused.delete(token);
    this.refused.set(token, Date.now() + this.refusalMs);
    this.kept.refused(token);
    if (this.refused.size > this.limits.maxRefused) forgetOldest(this.refused);
  }

  /** A key a backup held as validated, accepted with the stored scope. */
  private restoredAccepted(token: string): ValidatedToken | undefined {
    const restored = this.kept.take(token);
    if (restored === undefined) return undefined;
    this.accepted.set(token, restored);
    if (this.accepted.size > this.limits.maxAccepted) forgetOldest(this.accepted);
    return restored;
  }
}

function forgetOldest(map: Map<string, unknown>): void {
  const oldest = map.keys().next();
  if (!oldest.done) map.delete(oldest.value);
}
