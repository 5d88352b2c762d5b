import { hash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { NotReady } from '../../common/errors/http-errors';
import type { FeatureRepository } from '../upstream/feature-repository';
import type { StreamSlots } from './stream-limit';
import { timerDelay } from '../../common/timers/timer-delay';

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

/** The change stream of one key scope: its definitions' version and a way to open a stream. */
export interface ScopeStreams {
  /** The current version of the definitions the scope's answers depend on. */
  version(): DefinitionsVersion;
  /** Turns a response into a stream of the scope (see `ChangeStreams.accept`). */
  accept(res: ServerResponse, since: string | undefined): void;
}

/** The open streams of one source of definitions (the environment's, or a project view's). */
interface StreamGroup {
  readonly source: FeatureRepository;
  readonly open: Set<ServerResponse>;
  /** The version id its streams were last told of (or found at opening). */
  announced: string;
}

/**
 * The open OFREP change-notification streams (Server-Sent Events) of one environment: a
 * `refetchEvaluation` event to each when the definitions its key reads change, a comment heartbeat
 * on one shared timer, each holding one of the app's stream slots (all environments together), and
 * a stream whose client does not read is cut once its write buffer fills. A stream of a
 * project-limited key (`of(view)`) is told only when its view's version changes (its toggles, their
 * parents in other projects, the segments of both: `FeatureRepository.answerDefinitions`), not of
 * other projects' changes. Holds nothing per stream but the response.
 */
export class ChangeStreams implements ScopeStreams {
  private readonly open = new Set<ServerResponse>();
  /** Groups with open streams, by source. */
  private readonly groups = new Map<FeatureRepository, StreamGroup>();
  private readonly scopes = new WeakMap<FeatureRepository, ScopeStreams>();
  private readonly versions = new WeakMap<
    FeatureRepository,
    { revision: number; version: DefinitionsVersion }
  >();
  private readonly unsubscribe: () => void;
  private readonly timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly options: ChangeStreamsOptions) {
    this.unsubscribe = options.features.onChange(() => this.announce());
    if (options.heartbeatMs > 0) {
      this.timer = setInterval(() => this.broadcast(this.open, HEARTBEAT), timerDelay(options.heartbeatMs));
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

  /**
   * The streams of a key scope whose answers come from `source` (a project view of this
   * environment's definitions); this object itself for the environment's own definitions.
   */
  of(source: FeatureRepository): ScopeStreams {
    if (source === this.options.features) return this;
    let scope = this.scopes.get(source);
    if (scope === undefined) {
      scope = {
        version: () => this.versionOf(source),
        accept: (res, since) => this.acceptFor(source, res, since),
      };
      this.scopes.set(source, scope);
    }
    return scope;
  }

  /** The current definitions' version; computed once per revision. */
  version(): DefinitionsVersion {
    return this.versionOf(this.options.features);
  }

  /**
   * Turns a response into a stream. `since` is the version the client last saw (`Last-Event-ID`,
   * or the one its stream URL names): when the definitions changed since, the event is sent at once.
   * Throws a 503 when closed or when the app's stream slots are all taken.
   */
  accept(res: ServerResponse, since: string | undefined): void {
    this.acceptFor(this.options.features, res, since);
  }

  /** Sends its current version to every stream (whether or not it changed). */
  publish(): void {
    for (const group of this.groups.values()) {
      group.announced = this.versionOf(group.source).id;
      this.broadcast(group.open, Buffer.from(frame(this.versionOf(group.source))));
    }
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
    this.groups.clear();
  }

  /** Stops holding a stream and gives its slot back (once). */
  private forget(res: ServerResponse): void {
    if (this.open.delete(res)) this.options.slots.give();
  }

  /** The version of a source's definitions; computed once per revision of the source. */
  private versionOf(source: FeatureRepository): DefinitionsVersion {
    const cached = this.versions.get(source);
    if (cached?.revision === source.revision) return cached.version;
    const revision = source.revision;
    const digest = hash('sha256', JSON.stringify(source.answerDefinitions()), 'base64url').slice(0, 22);
    const lastUpdate = this.options.features.stats.lastUpdate || Date.now();
    const version = { id: digest, etag: `"${digest}"`, lastModified: Math.floor(lastUpdate / 1000) };
    this.versions.set(source, { revision, version });
    return version;
  }

  private acceptFor(source: FeatureRepository, res: ServerResponse, since: string | undefined): void {
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
    const current = this.versionOf(source);
    let group = this.groups.get(source);
    if (group === undefined) {
      group = { source, open: new Set(), announced: current.id };
      this.groups.set(source, group);
    }
    const joined = group;
    this.open.add(res);
    joined.open.add(res);
    res.once('close', () => this.drop(res, joined));
    res.socket?.setNoDelay(true);
    res.socket?.setTimeout(0);
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      // no-transform also keeps the compression middleware from buffering the stream
      'Cache-Control': 'no-cache, no-transform',
      'X-Accel-Buffering': 'no',
    });
    let first = ': connected\n\n';
    if (since !== undefined && since !== current.id) first += frame(current);
    this.write(res, Buffer.from(first));
  }

  /**
   * After a change of the environment's definitions: each group whose version changed since its
   * streams were last told is told, the others (other projects' changes, the same definitions
   * again) hear nothing.
   */
  private announce(): void {
    for (const group of [...this.groups.values()]) {
      const version = this.versionOf(group.source);
      if (version.id === group.announced) continue;
      group.announced = version.id;
      this.broadcast(group.open, Buffer.from(frame(version)));
    }
  }

  private drop(res: ServerResponse, group: StreamGroup): void {
    this.forget(res);
    group.open.delete(res);
    if (group.open.size === 0 && this.groups.get(group.source) === group) this.groups.delete(group.source);
  }

  private broadcast(streams: ReadonlySet<ServerResponse>, chunk: Buffer): void {
    for (const res of [...streams]) this.write(res, chunk);
  }

  private write(res: ServerResponse, chunk: Buffer): void {
    if (res.destroyed || res.writableEnded) return;
    const accepted = res.write(chunk);
    if (!accepted && res.writableLength > MAX_PENDING_BYTES) {
      this.options.slots.cutSlowReader();
      // its slot goes back now; its group lets it go on 'close'
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
