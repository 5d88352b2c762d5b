import { Counter, Gauge, type Registry } from 'prom-client';
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

/**
 * The change streams of one app, every environment together: at most `limit` open at once (the
 * configured `maxStreams`, at most half the process's descriptors), counted here by every
 * environment's `ChangeStreams`, with the open-streams gauge and the refused-streams counter.
 */
export class StreamSlots {
  readonly limit: number;
  private taken = 0;
  private readonly refused: Counter<'reason'>;

  constructor(maxStreams: number, registry: Registry, descriptors = descriptorLimit()) {
    this.limit = effectiveStreamLimit(maxStreams, descriptors);
    const open = () => this.taken;
    new Gauge({
      name: 'flags_proxy_event_streams',
      help: 'OFREP change-notification streams (SSE) open now, every environment together',
      registers: [registry],
      collect() {
        this.set(open());
      },
    });
    this.refused = new Counter({
      name: 'flags_proxy_event_streams_refused_total',
      help: 'OFREP change-notification streams refused or cut, by reason (limit, slow_reader)',
      labelNames: ['reason'],
      registers: [registry],
    });
  }

  /** Streams open now. */
  get size(): number {
    return this.taken;
  }

  /** A slot for a new stream; false (counted as refused) when `limit` are open. */
  take(): boolean {
    if (this.taken >= this.limit) {
      this.refused.inc({ reason: 'limit' });
      return false;
    }
    this.taken += 1;
    return true;
  }

  /** A stream's slot given back when it closed. */
  give(): void {
    this.taken -= 1;
  }

  /** A stream cut because its client does not read. */
  cutSlowReader(): void {
    this.refused.inc({ reason: 'slow_reader' });
  }
}
