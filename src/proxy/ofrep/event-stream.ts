import { hash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { NotReady } from '../../common/errors/http-errors';
import type { FeatureRepository } from '../upstream/feature-repository';
import type { StreamSlots } from './stream-limit';

export interface ChangeStreamsOptions {
  features: FeatureRepository;
  /** The app's stream slots, shared by every environment's streams; beyond them a stream is refused with 503. */
  slots: StreamSlots;
  /** ms between comment heartbeats; 0 sends none. */
  heartbeatMs: number;
}

/** A definitions revision as change notifications name it. */
export interface DefinitionsVersion {
  /** Event id: a digest of the definitions, the same on every replica serving them. */
  readonly id: string;
  readonly etag: string;
  /** Unix seconds of the last accepted definitions change. */
  readonly lastModified: number;
}

/** The most bytes a stream may have waiting to be written before it counts as not reading. */
const MAX_PENDING_BYTES = 64 * 1024;

const HEARTBEAT = Buffer.from(':\n\n');

/**
 * The open OFREP change-notification streams (Server-Sent Events) of one environment: a
 * `refetchEvaluation` event to each when the definitions revision changes, a comment heartbeat on
 * one shared timer, each holding one of the app's stream slots (all environments together), and a
 * stream whose client does not read is cut once its write buffer fills. Holds nothing per stream
 * but the response.
 */
export class ChangeStreams {
  private readonly open = new Set<ServerResponse>();
  private readonly unsubscribe: () => void;
  private readonly timer: NodeJS.Timeout | undefined;
  private closed = false;
  private cached: { revision: number; version: DefinitionsVersion } | undefined;

  constructor(private readonly options: ChangeStreamsOptions) {
    this.unsubscribe = options.features.onChange(() => this.publish());
    if (options.heartbeatMs > 0) {
      this.timer = setInterval(() => this.broadcast(HEARTBEAT), options.heartbeatMs);
      this.timer.unref();
    }
  }

  /** The most streams open at once, every environment together. */
  get limit(): number {
    return this.options.slots.limit;
  }

  get size(): number {
    return this.open.size;
  }

  /** The current definitions' version; computed once per revision. */
  version(): DefinitionsVersion {
    const { features } = this.options;
    if (this.cached?.revision !== features.revision) {
      const digest = hash('sha256', JSON.stringify(features.clientFeatures()), 'base64url').slice(0, 22);
      const lastUpdate = features.stats.lastUpdate || Date.now();
      this.cached = {
        revision: features.revision,
        version: { id: digest, etag: `"${digest}"`, lastModified: Math.floor(lastUpdate / 1000) },
      };
    }
    return this.cached.version;
  }

  /**
   * Turns a response into a stream. `since` is the version the client last saw (`Last-Event-ID`,
   * or the one its stream URL names): when the definitions changed since, the event is sent at once.
   * Throws a 503 when closed or when the app's stream slots are all taken.
   */
  accept(res: ServerResponse, since: string | undefined): void {
    if (this.closed) throw new NotReady('flags-proxy is shutting down; reconnect to another instance');
    const { slots } = this.options;
    if (!slots.take()) {
      res.setHeader('Retry-After', '5');
      throw new NotReady(
        `Too many open change streams (${slots.limit}, every environment together: maxStreams / FLAGS_MAX_STREAMS, at most half the process's file descriptor limit); retry later`,
      );
    }
    // a client gone before its stream opened never sends 'close' again: its slot goes back now
    if (res.destroyed) {
      slots.give();
      return;
    }
    this.open.add(res);
    res.once('close', () => this.forget(res));
    res.socket?.setNoDelay(true);
    res.socket?.setTimeout(0);
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      // no-transform also keeps the compression middleware from buffering the stream
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
    });
    let first = ': connected\n\n';
    if (since !== undefined && since !== this.version().id) first += frame(this.version());
    this.write(res, Buffer.from(first));
  }

  /** Sends the current version to every stream. */
  publish(): void {
    if (this.open.size > 0) this.broadcast(Buffer.from(frame(this.version())));
  }

  /** Ends every stream and refuses new ones. */
  close(): void {
    this.closed = true;
    this.unsubscribe();
    if (this.timer) clearInterval(this.timer);
    for (const res of [...this.open]) {
      this.forget(res);
      res.end();
    }
  }

  /** Stops holding a stream and gives its slot back (once). */
  private forget(res: ServerResponse): void {
    if (this.open.delete(res)) this.options.slots.give();
  }

  private broadcast(chunk: Buffer): void {
    for (const res of [...this.open]) this.write(res, chunk);
  }

  private write(res: ServerResponse, chunk: Buffer): void {
    if (res.destroyed || res.writableEnded) return;
    const accepted = res.write(chunk);
    if (!accepted && res.writableLength > MAX_PENDING_BYTES) {
      this.options.slots.cutSlowReader();
      this.forget(res);
      res.destroy();
    }
  }
}

function frame(version: DefinitionsVersion): string {
  const data = JSON.stringify({
    type: 'refetchEvaluation',
    etag: version.etag,
    lastModified: version.lastModified,
  });
  return `id: ${version.id}\nevent: message\ndata: ${data}\n\n`;
}
