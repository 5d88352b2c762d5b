import { isIPv6 } from 'node:net';
import { MAX_TOKENS_PER_VALIDATION } from '../../common/edge/validate-request';

/** Addresses whose budget is remembered; beyond this the one used longest ago is forgotten (a full budget again). */
const MAX_ADDRESSES = 10_000;

interface Bucket {
  /** Tokens left at `at`. */
  level: number;
  /** Epoch ms of `level`. */
  at: number;
}

/**
 * A budget of tokens per second for each client address (a token bucket): an address may ask
 * about `perSecond` tokens a second, and about as many at once as one second's budget or one full
 * request (250 tokens), whichever is more. Bounded: at most 10,000 addresses are remembered.
 */
export class AddressBudget {
  private readonly buckets = new Map<string, Bucket>();
  /** The most an address may spend at once. */
  readonly burst: number;

  constructor(readonly perSecond: number) {
    this.burst = Math.max(perSecond, MAX_TOKENS_PER_VALIDATION);
  }

  /**
   * Spends `tokens` of `address`'s budget: 0 when spent, else the whole seconds after which
   * they will be there (nothing is spent then).
   */
  spend(address: string, tokens: number, now = Date.now()): number {
    const bucket = this.buckets.get(address);
    const level =
      bucket === undefined
        ? this.burst
        : Math.min(this.burst, bucket.level + ((now - bucket.at) / 1000) * this.perSecond);
    if (level < tokens) return Math.max(1, Math.ceil((tokens - level) / this.perSecond));
    this.buckets.delete(address); // the newest last: the oldest is forgotten first
    this.buckets.set(address, { level: level - tokens, at: now });
    if (this.buckets.size > MAX_ADDRESSES) {
      const oldest = this.buckets.keys().next();
      if (!oldest.done) this.buckets.delete(oldest.value);
    }
    return 0;
  }

  /** Addresses remembered now. */
  get size(): number {
    return this.buckets.size;
  }
}

/**
 * Whose budget a client address spends: an IPv4 address (also written IPv4-mapped) its own; an
 * IPv6 address its /64 network, the least a single host is usually given.
 */
export function budgetHolder(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  if (!isIPv6(address)) return address;
  const [head, tail] = address.toLowerCase().split('::');
  const front = head === '' ? [] : head.split(':');
  const back = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = 8 - front.length - back.length;
  const groups =
    tail === undefined ? front : [...front, ...Array<string>(Math.max(0, missing)).fill('0'), ...back];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
