import type { Strategy } from 'unleash-client';
import { tell } from '../../common/logging/logger';
import type { HttpOptions } from '../upstream/sdk/types';
import type { DefinitionsBackup } from '../backup/definitions-backup';
import type { ProcessBudget } from './process-budget';
import { ClientUsage } from '../client-metrics/client-usage';
import type { ContextEnricher, ProxyConfig } from '../config/types';
import { ConnectionMemo } from '../engine/connection-memo';
import { Evaluator } from '../engine/evaluator';
import { EvaluationPipeline } from '../evaluation/pipeline';
import { ChangeStreams } from '../ofrep/event-stream';
import type { DefinitionsSource } from '../upstream/definitions-source';
import type { FeatureRepository } from '../upstream/feature-repository';
import { UnleashFeatureRepository } from '../sources/unleash-repository';
import { ProjectView } from './project-view';
import { coversProjects, isAllProjects, scopeKey, type Scope } from '../scopes/scope';

/** Everything a request of one scope is answered with. Built once per scope, shared by its keys. */
export interface ScopeServing {
  readonly scope: Scope;
  readonly environment: Environment;
  /** The environment's definitions limited to the scope's projects. */
  readonly features: FeatureRepository;
  readonly pipeline: EvaluationPipeline;
  /** The raw GET entry's per-connection memo of this scope's prepared queries. */
  readonly memo: ConnectionMemo;
  /** The scope's evaluator (its engine's statistics for the metrics). */
  readonly evaluator: Evaluator;
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
  /** The app's limits and budgets (streams, evaluation memory, project views), shared by every environment. */
  budget: ProcessBudget;
  /** Offline mode: the definitions come from this source, not from the upstream. */
  source?: DefinitionsSource;
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
  /** Its definitions backup (Redis or `BACKUP_FOLDER`), if one is configured. */
  get backup(): DefinitionsBackup | undefined {
    return this.options.backup;
  }

  /** Epoch ms at which it first held definitions (0: not yet). */
  readyAt = 0;
  /** Epoch ms of the last time the upstream refused this environment's token (0: never). */
  private refusedAt = 0;

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
      source: options.source,
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
      slots: options.budget.streams,
      heartbeatMs: config.streamHeartbeatInterval,
    });
    this.all = this.serving({ environment: this.name, projects: ['*'] }, this.features);
    void this.features.whenReady().then(() => {
      this.readyAt = Date.now();
      const count = this.features.toggles().length;
      tell(config.logger, `environment "${this.name}" ready: ${count} flag definitions`);
    });
  }

  private serving(scope: Scope, features: FeatureRepository): ScopeServing {
    const evaluator = new Evaluator(
      features,
      this.options.config.logger,
      this.options.budget.evaluation,
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
    return { scope, environment: this, features, pipeline, memo: new ConnectionMemo(evaluator), evaluator };
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
    // kept per app, every environment together (`ViewBudget`); a dropped view is rebuilt on use
    return this.options.budget.views.get(
      this,
      projects.join('\u0001'),
      () => this.serving({ environment: this.name, projects }, new ProjectView(this.features, projects)),
      (view) => view.features.toggles().length,
      dropView,
    );
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
    this.options.budget.views.dropAll(this);
    await Promise.all([this.clientUsage.close(), this.features.close()]);
    await this.options.backup?.close();
  }
}

/** A project view leaving the app's budget: its usage handed over, its memory given back. */
function dropView(view: ScopeServing): void {
  view.pipeline.evaluator.close();
  void view.features.close();
}
