import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * The header forwarded usage and registrations carry: the markers of the instances of ours they
 * passed through, comma-separated, the last the one that sent them. An instance that finds its own
 * marker there is part of a loop of upstreams (A's upstream is B, B's is A) and drops them.
 */
export const CHAIN_HEADER = 'flags-proxy-chain';

/** Most markers a chain holds: no real chain of instances is this long, so a longer one is a loop. */
export const MAX_CHAIN_LENGTH = 32;

const MARKER = /^[0-9a-f]{32}$/;

/** A marker of one instance's client usage: random, so two instances never share one. */
export function newChainMarker(): string {
  return randomBytes(16).toString('hex');
}

/**
 * The markers of the chain header (entries that are not markers ignored), or `too long` past
 * `MAX_CHAIN_LENGTH`. No header: a client SDK, an empty chain.
 */
export function chainOf(headers: IncomingHttpHeaders): string[] | 'too long' {
  const raw = headers[CHAIN_HEADER];
  if (raw === undefined) return [];
  const entries = (Array.isArray(raw) ? raw.join(',') : raw).split(',');
  if (entries.length > MAX_CHAIN_LENGTH) return 'too long';
  return entries.map((e) => e.trim()).filter((e) => MARKER.test(e));
}

/** The chains of several payloads as one (sorted, without repeats). */
export function joinChains(...chains: ReadonlyArray<readonly string[] | undefined>): string[] {
  return [...new Set(chains.flatMap((c) => c ?? []))].sort();
}
