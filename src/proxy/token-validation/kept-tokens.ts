import { MAX_STORED_TOKENS, tokenDigest, type StoredToken } from '../backup/stored-tokens';
import type { ValidatedToken } from './validation-client';

/**
 * What the validator keeps across a restart (in the definitions backup): the tokens it accepted,
 * as digests with their scope and validation time, and the tokens a backup restored.
 *
 * A restored token is known only by its digest: a key presented whose digest is among them is
 * accepted with the stored scope (and from then on is an accepted token like any, revalidated with
 * the others), but only until the upstream answers a validation call — then every key not yet
 * presented is asked about like every unknown key. Restored tokens not presented stay in later
 * backups (the upstream never said otherwise of them); a token the upstream refuses leaves them.
 */
export class KeptTokens {
  /** Digest → restored token, not presented yet. */
  private readonly restored = new Map<string, StoredToken>();
  /** Accepted token → epoch ms the upstream last confirmed it (or the backup said it had). */
  private readonly confirmedAt = new Map<string, number>();
  /** Restored tokens serve keys until the upstream answers a validation call. */
  private serving = true;
  /** Tokens presented from the backup, waiting for the upstream's word. */
  private promoted = 0;
  private readonly listeners: Array<() => void> = [];

  /** Adds tokens a backup held (bounded), while the upstream has not answered. */
  seed(tokens: readonly StoredToken[]): void {
    for (const token of tokens) {
      if (this.restored.size >= MAX_STORED_TOKENS) break;
      this.restored.set(token.digest, token);
    }
  }

  /** The restored token `key` stands for, taken out as accepted; undefined when there is none. */
  take(key: string): ValidatedToken | undefined {
    if (!this.serving || this.restored.size === 0) return undefined;
    const digest = tokenDigest(key);
    const stored = this.restored.get(digest);
    if (stored === undefined) return undefined;
    this.restored.delete(digest);
    this.confirmedAt.set(key, stored.validatedAt);
    this.promoted += 1;
    return { token: key, type: stored.type, environment: stored.environment, projects: stored.projects };
  }

  /** The upstream confirmed `key` now. */
  confirmed(key: string): void {
    if (this.restored.size > 0) this.restored.delete(tokenDigest(key));
    this.confirmedAt.delete(key);
    this.confirmedAt.set(key, Date.now());
    // without a backup nobody lists them: the oldest are forgotten past twice the bound
    if (this.confirmedAt.size > 2 * MAX_STORED_TOKENS)
      this.confirmedAt.delete(this.confirmedAt.keys().next().value as string);
    this.changed();
  }

  /** The upstream refused `key`: it is kept nowhere. */
  refused(key: string): void {
    const restored = this.restored.size > 0 && this.restored.delete(tokenDigest(key));
    if (this.confirmedAt.delete(key) || restored) this.changed();
  }

  /**
   * The upstream answered a validation call: restored tokens serve no more keys. True the first
   * time when keys were accepted from the backup (they are to be revalidated now).
   */
  answered(): boolean {
    if (!this.serving) return false;
    this.serving = false;
    return this.promoted > 0;
  }

  /** What a backup keeps: `accepted` (the validator's) as digests, then the restored tokens not presented. */
  list(accepted: ReadonlyMap<string, ValidatedToken>): StoredToken[] {
    const now = Date.now();
    const kept: StoredToken[] = [];
    for (const key of this.confirmedAt.keys()) if (!accepted.has(key)) this.confirmedAt.delete(key);
    for (const token of accepted.values()) {
      if (token.environment === undefined || token.projects.length === 0) continue;
      kept.push({
        digest: tokenDigest(token.token),
        type: token.type,
        environment: token.environment,
        projects: [...token.projects],
        validatedAt: this.confirmedAt.get(token.token) ?? now,
      });
    }
    for (const token of this.restored.values()) {
      if (kept.length >= MAX_STORED_TOKENS) break;
      kept.push(token);
    }
    return kept.slice(0, MAX_STORED_TOKENS);
  }

  /** Called whenever what `list` gives may have changed. */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }
}
