import type { Strategy } from 'unleash-client';
import type { HttpOptions } from '../upstream/sdk/types';
import { Registry } from 'prom-client';
import { checkBackupFolder } from '../backup/backup-folder';
import { backupPlace } from '../backup/backup-scope';
import { createBackup } from '../backup/create-backup';
import type { ProcessBudget } from './process-budget';
import type { ContextEnricher, OfflineConfig, ProxyConfig } from '../config/types';
import { OfflineFileSource } from '../offline/offline-source';
import { Environment, type ScopeServing } from './environment';
import { normaliseProjects } from '../scopes/scope';
import { upstreamTokens } from './upstream-tokens';

export interface RegistryOptions {
  config: ProxyConfig;
  strategies: Strategy[];
  enrichers: readonly ContextEnricher[];
  httpOptions: HttpOptions;
  /** The app's Prometheus registry. */
  registry: Registry;
  /** The app's limits and budgets, shared by every environment. */
  budget: ProcessBudget;
  onClientUsageDrop?: (reason: string) => void;
  onClientUsageForward?: (path: string, result: string) => void;
}

/**
 * Every environment the proxy serves: one `Environment` per upstream token, in the order they are
 * configured. A single-environment proxy is this registry with one entry.
 */
export class EnvironmentRegistry {
  readonly environments: readonly Environment[];

  /** True in offline mode: one environment, fed by the file, serves every key. */
  readonly offline: boolean;

  constructor(options: RegistryOptions) {
    const { config } = options;
    this.offline = config.offline !== undefined;
    if (config.offline) {
      this.environments = [offlineEnvironment(config.offline, options)];
      return;
    }
    // a folder others could write to is refused before anything starts
    if (config.backupFolder !== undefined && config.redisUrl === undefined)
      checkBackupFolder(config.backupFolder);
    const tokens = upstreamTokens(config.flagsApiTokens, config.environment);
    const several = tokens.length > 1;
    this.environments = tokens.map((upstream, index) => {
      // Each environment its own backup: never started from another's definitions.
      const place = backupPlace(config, upstream, { index, several });
      const own: ProxyConfig = {
        ...config,
        flagsApiToken: upstream.token,
        redisKeyPrefix: place.redisKeyPrefix,
        storageProvider: place.storageProvider,
        // A bootstrap is one definitions set: with several tokens, the first token's environment's.
        expBootstrap: index === 0 ? config.expBootstrap : undefined,
      };
      const backup = createBackup(own, place.scope, place.recordScope);
      if (index === 0) backup?.register(options.registry);
      return new Environment({
        name: upstream.environment,
        projects: upstream.projects,
        config: own,
        strategies: options.strategies,
        enrichers: options.enrichers,
        httpOptions: options.httpOptions,
        backup,
        named: upstream.named,
        unservedWhenRefused: several,
        scopedEtags: several || upstream.named,
        budget: options.budget,
        onClientUsageDrop: options.onClientUsageDrop,
        onClientUsageForward: options.onClientUsageForward,
      });
    });
  }

  /** The first upstream token's environment: what a plain client key is served from. */
  get first(): Environment {
    return this.environments[0];
  }

  /** True when any upstream token names its environment (Unleash's format). */
  get named(): boolean {
    return this.environments.some((e) => e.named);
  }

  /** The serving of `projects` in `environment`, when an upstream token of it covers them. */
  serving(environment: string, projects: readonly string[]): ScopeServing | undefined {
    const normalised = projects.length === 0 ? projects : normaliseProjects(projects);
    if (normalised.length === 0) return undefined;
    const env = this.environments.find((e) => e.name === environment && e.covers(normalised));
    return env?.servingFor(normalised);
  }

  /** The environment called `name` (the first of that name). */
  byName(name: string): Environment | undefined {
    return this.environments.find((e) => e.name === name);
  }

  /**
   * The process is ready while any environment is served (as Unleash Edge's ready check): a token
   * refused or not synchronised yet answers 503 to its own keys only. With one upstream token this
   * is that token's first synchronisation, as the specification has it.
   */
  isReady(): boolean {
    return this.environments.some((e) => e.isServing());
  }

  /** Resolves once any environment has synchronised (when `/proxy/health` turns 200). */
  whenReady(): Promise<void> {
    return Promise.any(this.environments.map((e) => e.features.whenReady()));
  }

  async close(): Promise<void> {
    await Promise.all(this.environments.map((e) => e.close()));
  }
}

/** Offline mode's one environment: the file is its source; nothing goes upstream. */
function offlineEnvironment(offline: OfflineConfig, options: RegistryOptions): Environment {
  const { config } = options;
  const source = new OfflineFileSource({
    path: offline.bootstrapFile,
    reloadIntervalMs: offline.reloadIntervalMs,
    maxBytes: config.maxStoredDefinitionsBytes,
    logger: config.logger,
  });
  return new Environment({
    name: config.environment ?? 'default',
    projects: ['*'],
    // metricsInterval 0: client SDKs' usage is accepted and dropped, never forwarded
    config: { ...config, metricsInterval: 0, expBootstrap: undefined, storageProvider: undefined },
    strategies: options.strategies,
    enrichers: options.enrichers,
    httpOptions: options.httpOptions,
    backup: undefined,
    named: false,
    unservedWhenRefused: false,
    scopedEtags: false,
    budget: options.budget,
    source,
    onClientUsageDrop: options.onClientUsageDrop,
    onClientUsageForward: options.onClientUsageForward,
  });
}
