import { createHash } from 'node:crypto';
import { silentLogger } from '../../../src/common/logging/logger';
import { TokenValidator } from '../../../src/proxy/token-validation/token-validator';
import type { ValidatedToken } from '../../../src/proxy/token-validation/validation-client';

const digestOf = (token: string) =>
  createHash('sha256').update(`flags-proxy validated token\n${token}`).digest('hex');

const KEPT = '*:development.kept-secret';
const OTHER_KEPT = '*:development.other-kept-secret';
const NEW = '*:development.new-secret';

const stored = (token: string) => ({
  digest: digestOf(token),
  type: 'frontend',
  environment: 'development',
  projects: ['*'],
  validatedAt: Date.UTC(2026, 0, 1),
});

/** A validator whose upstream is down until `answers` is set; every call is recorded. */
function validator() {
  const calls: string[][] = [];
  const upstream: { answers: Map<string, ValidatedToken> | undefined } = { answers: undefined };
  const v = new TokenValidator({
    validate: async (tokens) => {
      calls.push([...tokens]);
      if (!upstream.answers) throw new Error('upstream down');
      const answers = upstream.answers;
      return tokens.flatMap((t) => answers.get(t) ?? []);
    },
    revalidateIntervalMs: 3_600_000,
    logger: silentLogger,
    limits: { minSpacingMs: 0, maxWaitMs: 2_000 },
  });
  return { v, calls, upstream };
}

const confirmed = (token: string): ValidatedToken => ({
  token,
  type: 'frontend',
  environment: 'development',
  projects: ['*'],
});

describe('tokens kept in a backup, in the token validator', () => {
  test('a key whose digest was kept is accepted with the stored scope without asking; any other key is asked about', async () => {
    const { v, calls } = validator();
    v.seedAccepted([stored(KEPT)]);
    expect(v.known(KEPT)).toEqual(confirmed(KEPT));
    expect(calls).toEqual([]);
    const verdict = await v.check(NEW);
    expect(verdict).not.toBeNull();
    expect(verdict && 'token' in verdict).toBe(false); // 503: the upstream could not be asked
    expect(calls).toEqual([[NEW]]);
    v.close();
  });

  test('what a backup keeps: digests of accepted and restored tokens, never a secret, never a refused one', async () => {
    const { v, upstream } = validator();
    v.seedAccepted([stored(KEPT), stored(OTHER_KEPT)]);
    upstream.answers = new Map([[NEW, confirmed(NEW)]]);
    expect(await v.check(NEW)).toEqual(confirmed(NEW));
    const kept = v.keptTokens();
    expect(kept.map((t) => t.digest).sort()).toEqual(
      [digestOf(NEW), digestOf(KEPT), digestOf(OTHER_KEPT)].sort(),
    );
    expect(JSON.stringify(kept)).not.toContain('secret');
    // the upstream answered: a kept key not presented yet is asked about, and refused it leaves the backup
    expect(v.known(OTHER_KEPT)).toBeUndefined();
    expect(await v.check(OTHER_KEPT)).toBeNull();
    expect(v.keptTokens().map((t) => t.digest)).not.toContain(digestOf(OTHER_KEPT));
    v.close();
  });

  test('once the upstream answers, keys accepted from the backup are revalidated: a revoked one is refused', async () => {
    const { v, upstream, calls } = validator();
    v.seedAccepted([stored(KEPT)]);
    expect(v.known(KEPT)).toEqual(confirmed(KEPT));
    upstream.answers = new Map([[NEW, confirmed(NEW)]]); // KEPT revoked
    expect(await v.check(NEW)).toEqual(confirmed(NEW));
    await new Promise<void>((resolve) => {
      const poll = () => (v.known(KEPT) === null ? resolve() : setTimeout(poll, 10));
      poll();
    });
    expect(calls.some((c) => c.includes(KEPT))).toBe(true);
    expect(v.keptTokens().map((t) => t.digest)).toEqual([digestOf(NEW)]);
    v.close();
  });
});
