import type { ClientFeaturesResponse, Context } from 'unleash-client';
import type { FeatureInterface } from 'unleash-client/lib/feature';
import type { Segment } from 'unleash-client/lib/strategy/strategy';
import type {
  FastEvaluation,
  FeatureRepository,
  SdkVariant,
  UpstreamStats,
} from '../upstream/feature-repository';
import { segmentsUsedBy } from '../upstream/segments-used';
import type { ToggleFault } from '../upstream/toggle-faults';

/**
 * One environment's definitions limited to some projects: the same repository, seen through a
 * filter computed once per revision. An `Evaluator` over it compiles its own plan, so the filter is
 * part of the plan and never applied per request. Usage is counted in the environment's repository.
 */
export class ProjectView implements FeatureRepository {
  private readonly projects: ReadonlySet<string>;
  private filtered: readonly FeatureInterface[] = [];
  private filteredRevision = -1;
  private readonly changeListeners = new Set<() => void>();
  private readonly usageListeners = new Set<() => void>();
  private readonly detach: Array<() => void>;

  constructor(
    private readonly base: FeatureRepository,
    projects: readonly string[],
  ) {
    this.projects = new Set(projects);
    this.detach = [
      base.onChange(() => {
        for (const listener of this.changeListeners) listener();
      }),
      base.beforeUsageSent(() => {
        for (const listener of this.usageListeners) listener();
      }),
    ];
  }

  get revision(): number {
    return this.base.revision;
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
    const revision = this.base.revision;
    if (this.filteredRevision !== revision) {
      this.filtered = Object.freeze(this.base.toggles().filter((f) => this.visible(f)));
      this.filteredRevision = revision;
    }
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
    return segmentsUsedBy(this.toggles(), (id) => this.base.segments().find((s) => s.id === id));
  }

  clientFeatures(): ClientFeaturesResponse {
    return { version: 2, features: [...this.toggles()], segments: this.segments() };
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
