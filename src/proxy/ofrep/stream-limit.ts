import { readFileSync } from 'node:fs';

/** The share of the process's file descriptors change streams may take; the rest is headroom. */
export const STREAM_SHARE_OF_DESCRIPTORS = 0.5;

/**
 * The soft limit on open file descriptors (RLIMIT_NOFILE) of this process, from `/proc/self/limits`
 * (Node has no API for it); undefined where that file does not exist (not Linux) or says unlimited.
 */
export function descriptorLimit(limitsFile = '/proc/self/limits'): number | undefined {
  let text: string;
  try {
    text = readFileSync(limitsFile, 'utf8');
  } catch {
    return undefined;
  }
  const line = text.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  const n = Number(soft);
  return soft !== undefined && Number.isInteger(n) && n > 0 ? n : undefined;
}

/**
 * How many change streams may be open at once: the configured `maxStreams`, but never more than
 * half the descriptors the process may open, so health checks, evaluations and the upstream
 * connection always find one.
 */
export function effectiveStreamLimit(configured: number, descriptors = descriptorLimit()): number {
  if (descriptors === undefined) return configured;
  return Math.min(configured, Math.floor(descriptors * STREAM_SHARE_OF_DESCRIPTORS));
}
