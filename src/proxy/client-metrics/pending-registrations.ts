import { SourceQuota, type DropReason } from './usage-aggregator';

/** An SDK instance's registration, as forwarded to the upstream's `/client/register`. */
export interface Registration {
  appName: string;
  instanceId: string;
  environment?: string;
  sdkVersion?: string;
  strategies: string[];
  /** Epoch ms. */
  started?: number;
  interval?: number;
  /** Forwards that failed (network error or 5xx) in a row; retried within a bound. */
  failures?: number;
  /** Markers of the instances of ours it passed through (see `usage-chain.ts`). */
  chain?: readonly string[];
}

export const DEFAULT_MAX_REGISTRATIONS = 1000;
/** Most new registrations one client address may queue per forward interval. */
export const DEFAULT_MAX_REGISTRATIONS_PER_SOURCE = 100;

/**
 * Registrations waiting for the next forward, one per (appName, instanceId, environment) — a later
 * registration of the same instance replaces the earlier one. At most `max` are held; beyond that new
 * instances are dropped and reported through `onDrop`.
 */
export class PendingRegistrations {
  private pending = new Map<string, Registration>();
  private opened = new SourceQuota();

  constructor(
    private readonly max: number = DEFAULT_MAX_REGISTRATIONS,
    private readonly onDrop: (reason: DropReason) => void = () => undefined,
    private readonly maxPerSource: number = DEFAULT_MAX_REGISTRATIONS_PER_SOURCE,
  ) {}

  /**
   * Queues a registration; `keepNewer` leaves one already queued in place (used when re-queueing a
   * failed forward); `source` is the client's address, of which each may queue `maxPerSource` per interval.
   */
  add(registration: Registration, keepNewer = false, source?: string): void {
    const key = JSON.stringify([
      registration.appName,
      registration.instanceId,
      registration.environment ?? null,
    ]);
    if (this.pending.has(key)) {
      if (!keepNewer) this.pending.set(key, registration);
      return;
    }
    if (
      this.pending.size >= this.max ||
      (source !== undefined && !this.opened.take(source, this.maxPerSource))
    ) {
      this.onDrop('registration');
      return;
    }
    this.pending.set(key, registration);
  }

  drain(): Registration[] {
    const all = [...this.pending.values()];
    this.pending = new Map();
    this.opened = new SourceQuota();
    return all;
  }

  /** The registrations waiting, without draining them. */
  list(): readonly Registration[] {
    return [...this.pending.values()];
  }

  get size(): number {
    return this.pending.size;
  }
}
