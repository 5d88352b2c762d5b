import { hash } from 'node:crypto';
import type { ClientFeaturesResponse, Context } from 'unleash-client';
import type { FeatureInterface, Segment } from '../upstream/sdk/types';
import type {
  FastEvaluation,
  FeatureRepository,
  SdkVariant,
  UpstreamStats,
} from '../upstream/feature-repository';
import { segmentsUsedBy } from '../upstream/segments-used';
import type { ToggleFault } from '../upstream/toggle-faults';

/** What a view's answers depend on (`answerDefinitions`). */
interface ViewDefinitions {
  readonly version: 2;
  /** The view's toggles, sorted by name (what `clientFeatures` lists). */
  readonly features: readonly FeatureInterface[];
  /** Parents its toggles depend on that are in other projects, sorted by name. */
  readonly parents: readonly FeatureInterface[];
  /** Segments used by either, by id. */
  readonly segments: readonly Segment[];
}

/**
 * One environment's definitions limited to some projects: the same repository, seen through a
 * filter computed once per revision. An `Evaluator` over it compiles its own plan, so the filter is
 * part of the plan and never applied per request. Usage is counted in the environment's repository.
 *
 * Its toggles are evaluated as the SDK evaluates them, over the whole environment: a parent in
 * another project counts. Its revision therefore moves when anything its answers depend on changes
 * (its toggles, the parents they depend on wherever they are, the segments of either: see
 * `answerDefinitions`), and only then: a change elsewhere in the environment recompiles nothing,
 * keeps its derived ETags and memos, and tells its change streams nothing.
 */
export class ProjectView implements FeatureRepository {
  private readonly projects: ReadonlySet<string>;
  private filtered: readonly FeatureInterface[] = [];
  private definitions: ViewDefinitions = { version: 2, features: [], parents: [], segments: [] };
  /** Digest of `definitions` and readiness, to tell a change of the view from one elsewhere. */
  private digest = '';
  /** The base revision last looked at, and the one at which the view last changed (its own). */
  private seenBaseRevision = -1;
  private ownRevision = 0;
  private notifiedRevision = -1;
  private readonly changeListeners = new Set<() => void>();
  private readonly usageListeners = new Set<() => void>();
  private readonly detach: Array<() => void>;

  constructor(
    private readonly base: FeatureRepository,
    projects: readonly string[],
  ) {
    this.projects = new Set(projects);
    this.sync();
    this.notifiedRevision = this.ownRevision;
    this.detach = [
      base.onChange(() => {
        this.sync();
        if (this.notifiedRevision === this.ownRevision) return;
        this.notifiedRevision = this.ownRevision;
        for (const listener of this.changeListeners) listener();
      }),
      base.beforeUsageSent(() => {
        for (const listener of this.usageListeners) listener();
      }),
    ];
  }

  /** Moves with the environment's revision, but only when this view's answers may change. */
  get revision(): number {
    this.sync();
    return this.ownRevision;
  }

  /** Looks at the environment's definitions once per revision of theirs. */
  private sync(): void {
    const baseRevision = this.base.revision;
    if (baseRevision === this.seenBaseRevision) return;
    this.seenBaseRevision = baseRevision;
    const features = Object.freeze(this.base.toggles().filter((f) => this.visible(f)));
    const definitions = this.definitionsOf(features);
    const json = JSON.stringify([this.base.isReady(), definitions]);
    // UTF-16 code units: lone surrogates the SDK tells apart stay apart
    const digest = hash('sha256', Buffer.from(json, 'utf16le'), 'base64url');
    if (digest === this.digest) return;
    this.digest = digest;
    this.filtered = features;
    this.definitions = definitions;
    this.ownRevision = baseRevision;
  }

  /**
   * The view's toggles, the parents they depend on in other projects (found by name as the SDK
   * finds them, so a parent missing now and added later is a change), and the segments of both.
   */
  private definitionsOf(features: readonly FeatureInterface[]): ViewDefinitions {
    const parents = new Map<string, FeatureInterface>();
    for (const feature of features) {
      const dependencies: unknown = feature.dependencies;
      if (!Array.isArray(dependencies)) continue;
      for (const dependency of dependencies as unknown[]) {
        const name: unknown = (dependency as { feature?: unknown } | null)?.feature;
        if (typeof name !== 'string' || parents.has(name)) continue;
        const parent = this.base.toggle(name);
        if (parent !== undefined && !this.visible(parent)) parents.set(name, parent);
      }
    }
    const outside = [...parents.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const known = new Map(this.base.segments().map((s) => [s.id, s]));
    const segments = segmentsUsedBy([...features, ...outside], (id) => known.get(id));
    return { version: 2, features, parents: outside, segments };
  }

  get stats(): UpstreamStats {
    return this.base.stats;
  }

  isReady(): boolean {
    return this.base.isReady();
  }

  whenReady(): Promise<void> {
    return this.base.whenReady();
  }

  private visible(feature: FeatureInterface | undefined): boolean {
    return feature !== undefined && this.projects.has(String(feature.project ?? 'default'));
  }

  toggles(): readonly FeatureInterface[] {
    this.sync();
    return this.filtered;
  }

  toggle(name: string): FeatureInterface | undefined {
    const feature = this.base.toggle(name);
    return this.visible(feature) ? feature : undefined;
  }

  fault(name: string): ToggleFault | undefined {
    return this.visible(this.base.toggle(name)) ? this.base.fault(name) : undefined;
  }

  isIrregular(name: string): boolean {
    return this.visible(this.base.toggle(name)) && this.base.isIrregular(name);
  }

  segments(): Segment[] {
    const known = new Map(this.base.segments().map((s) => [s.id, s]));
    return segmentsUsedBy(this.toggles(), (id) => known.get(id));
  }

  clientFeatures(): ClientFeaturesResponse {
    return { version: 2, features: [...this.toggles()], segments: this.segments() };
  }

  answerDefinitions(): ViewDefinitions {
    this.sync();
    return this.definitions;
  }

  evaluate(name: string, context: Context): SdkVariant | undefined {
    return this.visible(this.base.toggle(name)) ? this.base.evaluate(name, context) : undefined;
  }

  fast(): FastEvaluation | undefined {
    return this.base.fast?.();
  }

  addUsage(name: string, enabled: boolean, variant: string, times: number): void {
    this.base.addUsage(name, enabled, variant, times);
  }

  beforeUsageSent(listener: () => void): () => void {
    this.usageListeners.add(listener);
    return () => this.usageListeners.delete(listener);
  }

  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** Hands pending usage over and stops following the repository; the repository stays open. */
  async close(): Promise<void> {
    for (const listener of this.usageListeners) listener();
    for (const stop of this.detach) stop();
    this.changeListeners.clear();
    this.usageListeners.clear();
  }
}
