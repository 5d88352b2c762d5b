import type { Strategy } from 'unleash-client';
import type { HttpOptions } from 'unleash-client/lib/http-options';
import type { Registry } from 'prom-client';
import type { DefinitionsBackup } from '../backup/definitions-backup';
import { ClientUsage } from '../client-metrics/client-usage';
import type { ContextEnricher, ProxyConfig } from '../config/types';
import { ConnectionMemo } from '../evaluation/connection-memo';
import { Evaluator } from '../evaluation/evaluator';
import { EvaluationPipeline } from '../evaluation/pipeline';
import { effectiveStreamLimit } from '../ofrep/stream-limit';
import { ChangeStreams } from '../ofrep/event-stream';
import type { FeatureRepository } from '../upstream/feature-repository';
import { UnleashFeatureRepository } from '../upstream/unleash-repository';
import { ProjectView } from './project-view';
import { coversProjects, isAllProjects, scopeKey, type Scope } from './scope';

/** Project-limited views kept per environment; beyond this the least recently used one is dropped. */
const MAX_VIEWS = 32;

/** Everything a request of one scope is answered with. Built once per scope, shared by its keys. */
export interface ScopeServing {
  readonly scope: Scope;
  readonly environment: Environment;
  /** The environment's definitions limited to the scope's projects. */
  readonly features: FeatureRepository;
  readonly pipeline: EvaluationPipeline;
  /** The raw GET entry's per-connection memo of this scope's prepared queries. */
  readonly memo: ConnectionMemo;
}

export interface EnvironmentOptions {
  /** The environment's name: the upstream token's environment, or the configured one (`default`). */
  name: string;
  /** Projects the upstream token reads (`['*']` all; `[]` named only by the upstream). */
  projects: readonly string[];
  /** The proxy's configuration with this environment's upstream token as `flagsApiToken`. */
  config: ProxyConfig;
  strategies: Strategy[];
  enrichers: readonly ContextEnricher[];
  httpOptions: HttpOptions;
  backup: DefinitionsBackup | undefined;
  /** True when the upstream token is in Unleash's format, naming the environment. */
  named: boolean;
  /**
   * True when the proxy holds several upstream tokens: a refused one then answers 503 to its keys
   * while the others keep serving. With one token the last good definitions keep being served.
   */
  unservedWhenRefused: boolean;
  /** False for a single-environment proxy: its derived ETags stay those it always had. */
  scopedEtags: boolean;
  /** Where the change-stream series go (the app's registry for the first environment). */
  registry: Registry;
  onClientUsageDrop?: (reason: string) => void;
  onClientUsageForward?: (path: string, result: string) => void;
}

/**
 * One upstream token's world: its poller and repository, evaluator and plan, usage tally, client
 * usage forwarded with its token, change streams and backup key. Keys of its environment are
 * served from here, limited to their projects by views compiled once per revision.
 */
export class Environment {
  readonly name: string;
  readonly projects: readonly string[];
  readonly named: boolean;
  readonly features: UnleashFeatureRepository;
  readonly clientUsage: ClientUsage;
  readonly changeStreams: ChangeStreams;
  /** The serving of every project the upstream token reads. */
  readonly all: ScopeServing;
  /** Epoch ms of the last time the upstream refused this environment's token (0: never). */
  private refusedAt = 0;
  private readonly views = new Map<string, ScopeServing>();

  constructor(private readonly options: EnvironmentOptions) {
    const { config } = options;
    this.name = options.name;
    this.projects = options.projects;
    this.named = options.named;
    this.features = new UnleashFeatureRepository({
      config,
      strategies: options.strategies,
      httpOptions: options.httpOptions,
      backup: options.backup,
      environment: options.named || options.unservedWhenRefused ? this.name : undefined,
      onRejected: () => {
        this.refusedAt = Date.now();
      },
    });
    this.clientUsage = new ClientUsage({
      config,
      httpOptions: options.httpOptions,
      onDrop: options.onClientUsageDrop,
      onForward: options.onClientUsageForward,
    });
    this.changeStreams = new ChangeStreams({
      features: this.features,
      maxStreams: effectiveStreamLimit(config.maxStreams),
      heartbeatMs: config.streamHeartbeatInterval,
      registry: options.registry,
    });
    this.all = this.serving({ environment: this.name, projects: ['*'] }, this.features);
  }

  private serving(scope: Scope, features: FeatureRepository): ScopeServing {
    const evaluator = new Evaluator(
      features,
      this.options.config.logger,
      undefined,
      this.options.scopedEtags ? scopeKey(scope) : undefined,
    );
    const pipeline = new EvaluationPipeline({
      evaluator,
      environment: this.options.config.environment,
      enrichers: this.options.enrichers,
      enableAllEndpoint: this.options.config.enableAllEndpoint,
      contextLimits: {
        maxProperties: this.options.config.maxContextProperties,
        maxValueLength: this.options.config.maxContextValueLength,
        maxTotalLength: this.options.config.maxContextSize,
      },
      vary: this.options.config.keyVary.evaluation,
    });
    return { scope, environment: this, features, pipeline, memo: new ConnectionMemo(evaluator) };
  }

  /** True when the upstream token reads every project of `projects`. */
  covers(projects: readonly string[]): boolean {
    // `[]:` upstream tokens name their projects only to the upstream: every named project is served,
    // limited to what the token's definitions hold.
    if (this.projects.length === 0) return !isAllProjects(projects);
    return coversProjects(this.projects, projects);
  }

  /** The serving of a scope of this environment (`projects` sorted, as `normaliseProjects` gives). */
  servingFor(projects: readonly string[]): ScopeServing {
    if (isAllProjects(projects) || (this.projects.length > 0 && coversProjects(projects, this.projects)))
      return this.all;
    const key = projects.join('\u0001');
    const found = this.views.get(key);
    if (found) {
      this.views.delete(key);
      this.views.set(key, found);
      return found;
    }
    const serving = this.serving(
      { environment: this.name, projects },
      new ProjectView(this.features, projects),
    );
    this.views.set(key, serving);
    if (this.views.size > MAX_VIEWS) {
      const [oldestKey, oldest] = this.views.entries().next().value as [string, ScopeServing];
      this.views.delete(oldestKey);
      void oldest.features.close();
    }
    return serving;
  }

  /** Synchronised once, and not refused by the upstream since its last successful fetch. */
  isServing(): boolean {
    if (!this.features.isReady()) return false;
    return (
      !this.options.unservedWhenRefused ||
      this.refusedAt === 0 ||
      this.features.stats.lastFetch > this.refusedAt
    );
  }

  /** True when the upstream refused the token and no fetch succeeded since. */
  get refused(): boolean {
    return this.refusedAt !== 0 && this.features.stats.lastFetch <= this.refusedAt;
  }

  async close(): Promise<void> {
    this.changeStreams.close();
    for (const view of this.views.values()) await view.features.close();
    this.views.clear();
    await Promise.all([this.clientUsage.close(), this.features.close()]);
    await this.options.backup?.close();
  }
}
