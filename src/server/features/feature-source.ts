import { createHash } from 'node:crypto';
import { unwatchFile, watchFile, type Stats } from 'node:fs';
import { readChecked } from '../../common/files/checked-read';
import type { Logger } from '../../common/logging/logger';
import { describeIssues } from '../http/validate';
import { featuresFileSchema, type FeatureDefinition, type SegmentDefinition } from './schema';

/** One loaded, valid set of definitions. */
export interface FeatureSnapshot {
  /** Counts successful loads with changed content in this process, from 1. */
  revision: number;
  /** Hash of the definitions; part of every ETag, so a restart with other flags never matches an old ETag. */
  contentHash: string;
  features: FeatureDefinition[];
  segments: SegmentDefinition[];
  loadedAt: Date;
}

export class FeaturesFileError extends Error {}

/** Largest features file read: 64 MiB, as the proxy's largest stored definitions. */
export const FEATURES_FILE_MAX_BYTES = 64 * 1024 * 1024;

/** Reads and validates a features file; throws FeaturesFileError naming the problem. */
export async function loadFeaturesFile(
  file: string,
): Promise<Omit<FeatureSnapshot, 'revision' | 'loadedAt'>> {
  // opened once without blocking and checked on the handle: a FIFO or a device never stalls the server
  const read = await readChecked(file, {
    maxBytes: FEATURES_FILE_MAX_BYTES,
    limitName: 'the limit of 64 MiB',
  });
  if ('refused' in read) throw new FeaturesFileError(`cannot read features file ${file}: ${read.refused}`);
  const text = read.bytes.toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new FeaturesFileError(
      `features file ${file} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  const parsed = featuresFileSchema.safeParse(json);
  if (!parsed.success)
    throw new FeaturesFileError(`features file ${file} is not valid: ${describeIssues(parsed.error)}`);
  const { features, segments } = parsed.data;
  const contentHash = createHash('sha256')
    .update(JSON.stringify({ features, segments }))
    .digest('base64url')
    .slice(0, 16);
  return { contentHash, features, segments };
}

/**
 * The flag definitions of a running server: loaded from the features file at start (an invalid file
 * then stops start-up) and re-read when the file changes. A later invalid file is logged and the last
 * good definitions stay served.
 */
export class FeatureSource {
  private snapshot!: FeatureSnapshot;
  private watching = false;
  private reloading: Promise<void> = Promise.resolve();
  private readonly listeners = new Set<(s: FeatureSnapshot) => void>();

  private constructor(
    readonly file: string,
    private readonly logger: Logger,
  ) {}

  static async open(file: string, logger: Logger, watchIntervalMs: number): Promise<FeatureSource> {
    const source = new FeatureSource(file, logger);
    const loaded = await loadFeaturesFile(file);
    source.snapshot = { ...loaded, revision: 1, loadedAt: new Date() };
    logger.info('loaded features file', { file, features: loaded.features.length, revision: 1 });
    if (watchIntervalMs > 0) source.watch(watchIntervalMs);
    return source;
  }

  current(): FeatureSnapshot {
    return this.snapshot;
  }

  /** Called after every change of the served definitions. */
  onChange(listener: (s: FeatureSnapshot) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Re-reads the file now; resolves when done (also used by the watcher). */
  reload(): Promise<void> {
    this.reloading = this.reloading.then(() => this.doReload());
    return this.reloading;
  }

  close(): void {
    if (this.watching) unwatchFile(this.file, this.onStat);
    this.watching = false;
    this.listeners.clear();
  }

  private watch(intervalMs: number): void {
    watchFile(this.file, { interval: intervalMs, persistent: false }, this.onStat);
    this.watching = true;
  }

  private readonly onStat = (curr: Stats, prev: Stats): void => {
    if (curr.mtimeMs === prev.mtimeMs && curr.size === prev.size && curr.ino === prev.ino) return;
    void this.reload();
  };

  private async doReload(): Promise<void> {
    try {
      const loaded = await loadFeaturesFile(this.file);
      if (loaded.contentHash === this.snapshot.contentHash) return;
      this.snapshot = { ...loaded, revision: this.snapshot.revision + 1, loadedAt: new Date() };
      this.logger.info('features file changed; serving new definitions', {
        file: this.file,
        features: loaded.features.length,
        revision: this.snapshot.revision,
      });
      for (const listener of this.listeners) listener(this.snapshot);
    } catch (err) {
      this.logger.error(
        `${err instanceof Error ? err.message : String(err)}; keeping the last good definitions`,
        {
          revision: this.snapshot.revision,
        },
      );
    }
  }
}
