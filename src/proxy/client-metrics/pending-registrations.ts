import type { DropReason } from './usage-aggregator';

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
}

export const DEFAULT_MAX_REGISTRATIONS = 1000;

/**
 * Registrations waiting for the next forward, one per (appName, instanceId, environment) — a later
 * registration of the same instance replaces the earlier one. At most `max` are held; beyond that new
 * instances are dropped and reported through `onDrop`.
 */
export class PendingRegistrations {
  private pending = new Map<string, Registration>();

  constructor(
    private readonly max: number = DEFAULT_MAX_REGISTRATIONS,
    private readonly onDrop: (reason: DropReason) => void = () => undefined,
  ) {}

  /** Queues a registration; `keepNewer` leaves one already queued in place (used when re-queueing a failed forward). */
  add(registration: Registration, keepNewer = false): void {
    const key = JSON.stringify([
      registration.appName,
      registration.instanceId,
      registration.environment ?? null,
    ]);
    if (this.pending.has(key)) {
      if (!keepNewer) this.pending.set(key, registration);
      return;
    }
    if (this.pending.size >= this.max) {
      this.onDrop('registration');
      return;
    }
    this.pending.set(key, registration);
  }

  drain(): Registration[] {
    const all = [...this.pending.values()];
    this.pending = new Map();
    return all;
  }

  get size(): number {
    return this.pending.size;
  }
}
