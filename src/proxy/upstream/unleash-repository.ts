import {
  InMemStorageProvider,
  type ClientFeaturesResponse,
  type Context,
  type Strategy,
} from 'unleash-client';
import type { FeatureInterface } from 'unleash-client/lib/feature';
import { resolveBootstrapProvider } from 'unleash-client/lib/repository/bootstrap-provider';
import type { Segment } from 'unleash-client/lib/strategy/strategy';
import type { HttpOptions } from 'unleash-client/lib/http-options';
import type { Logger } from '../../common/logging/logger';
import type { ProxyConfig } from '../config/types';
import type { SdkVariant, FastEvaluation, FeatureRepository, UpstreamStats } from './feature-repository';
import { GuardedRepository } from './guarded-repository';
import { DecidingStrategy, ProxyUnleash, usageBucket, type SdkMetrics } from './sdk-internals';
import { resolveVariant } from './sdk-variant';
import { RateLimitedLog } from '../../common/logging/rate-limited-log';
import type { DefinitionsBackup } from '../backup/definitions-backup';

export interface UnleashRepositoryOptions {
  config: ProxyConfig;
  strategies: Strategy[];
  httpOptions: HttpOptions;
  /** Shared backup: written with every upstream answer, read at start while the upstream does not answer. */
  backup?: DefinitionsBackup;
  /** Called when the upstream refuses the API token (401/403), after it is logged. */
  onRejected?: (status: number) => void;
}

/** Exactly one trailing slash: the SDK resolves `client/features` against it. */
function cleanUrl(url: string): string {
  return `${url.replace(/\/+$/, '')}/`;
}

/** The one adapter around `unleash-client`: it fetches, refreshes and evaluates. */
export class UnleashFeatureRepository implements FeatureRepository {
  revision = 0;
  readonly stats: UpstreamStats = { lastUpdate: 0, lastFetch: 0, fetchErrors: 0, definitionsRefused: 0 };
  private readonly unleash: ProxyUnleash;
  private readonly staticContext: Context;
  private readonly customStrategies: readonly Strategy[];
  private readonly metrics: SdkMetrics | undefined;
  /** OFREP reasons: which strategy definition enabled a toggle in the last `resolve`. */
  private readonly deciding: DecidingStrategy;
  private readonly usageListeners = new Set<() => void>();
  private readonly fastEvaluation: FastEvaluation;
  private readonly repository: GuardedRepository;
  private readonly logger: Logger;
  private readonly listeners = new Set<() => void>();
  private readonly readyPromise: Promise<void>;
  private ready = false;
  private sorted: readonly FeatureInterface[] = [];
  private sortedRevision = -1;
  private readonly strategyErrors: RateLimitedLog;
  private readonly upstreamWarnings: RateLimitedLog;

  constructor({ config, strategies, httpOptions, backup, onRejected }: UnleashRepositoryOptions) {
    this.logger = config.logger;
    this.strategyErrors = new RateLimitedLog(this.logger, 60_000);
    this.upstreamWarnings = new RateLimitedLog(this.logger, 60_000);
    const url = cleanUrl(config.flagsUrl);
    const headers = { Authorization: config.flagsApiToken };
    const featuresUrl = `${url}client/features`;
    this.repository = new GuardedRepository({
      url,
      appName: config.flagsAppName,
      instanceId: config.flagsInstanceId,
      connectionId: config.flagsInstanceId,
      projectName: config.projectName,
      project: config.projectName,
      refreshInterval: config.refreshInterval,
      headers,
      httpOptions,
      namePrefix: config.namePrefix,
      tags: config.tags,
      bootstrapProvider: resolveBootstrapProvider(
        config.expBootstrap ?? {},
        config.flagsAppName,
        config.flagsInstanceId,
      ),
      bootstrapOverride: false,
      // In memory by default: a backup file left by an earlier run must not make a fresh proxy ready.
      storageProvider:
        backup?.storageProvider(config.storageProvider) ??
        config.storageProvider ??
        new InMemStorageProvider<ClientFeaturesResponse>(),
      mode: { type: 'polling', format: 'full' },
      onDefinitions: (fromApi) => {
        if (fromApi) backup?.save(this.clientFeatures());
      },
      onRefused: (problem) => {
        this.stats.definitionsRefused += 1;
        this.upstreamWarnings.error(
          `upstream definitions refused, keeping the last good ones: ${problem.message}`,
          problem.message,
        );
      },
      onRejected: (status, retryInMs) => {
        this.logger.error(
          `Upstream ${featuresUrl} rejected the API token (HTTP ${status}); check FLAGS_API_TOKEN. Retrying in ${Math.round(retryInMs / 1000)}s`,
        );
        onRejected?.(status);
      },
    });
    backup?.watch(this.repository);
    this.customStrategies = strategies;
    this.staticContext = { appName: config.flagsAppName, environment: config.environment ?? 'default' };
    this.unleash = new ProxyUnleash({
      url,
      appName: config.flagsAppName,
      instanceId: config.flagsInstanceId,
      environment: config.environment ?? 'default',
      refreshInterval: config.refreshInterval,
      metricsInterval: config.metricsInterval,
      metricsJitter: config.metricsJitter,
      customHeaders: headers,
      httpOptions,
      strategies,
      repository: this.repository,
      skipInstanceCountWarning: true,
    });
    // Batched counts reach the bucket before the SDK reads it: on its timer, on flush and on close.
    this.metrics = usageBucket(this.unleash, () => {
      for (const listener of this.usageListeners) listener();
    });
    this.deciding = new DecidingStrategy(this.unleash);
    this.fastEvaluation = this.createFastEvaluation();
    this.readyPromise = new Promise((resolve) => {
      this.repository.once('ready', () => {
        this.ready = true;
        this.bump();
        resolve();
      });
    });
    this.repository.on('changed', () => {
      this.stats.lastUpdate = Date.now();
      this.stats.lastFetch = this.stats.lastUpdate;
      this.bump();
    });
    this.repository.on('unchanged', () => {
      this.stats.lastFetch = Date.now();
    });
    this.unleash.on('error', (err: unknown) => {
      const message = err instanceof Error ? err.message : String(err);
      if (/responded (401|403)\b/.test(message)) {
        this.stats.fetchErrors += 1;
        return; // logged at error level by onRejected
      }
      if (message.startsWith('Unleash Repository error')) this.stats.fetchErrors += 1;
      this.upstreamWarnings.warn(
        message.replace(/^Unleash (Repository|Metrics) error: /, 'upstream: '),
        message,
      );
    });
    this.unleash.on('warn', (msg: unknown) => {
      const text = String(msg);
      if (/responded|Backing off/.test(text)) this.stats.fetchErrors += 1;
      this.upstreamWarnings.warn(`upstream: ${text}`, text);
    });
  }

  private bump(): void {
    this.revision += 1;
    for (const listener of this.listeners) listener();
  }

  isReady(): boolean {
    return this.ready;
  }

  whenReady(): Promise<void> {
    return this.readyPromise;
  }

  toggles(): readonly FeatureInterface[] {
    if (this.sortedRevision !== this.revision) {
      this.sorted = Object.freeze(
        [...this.repository.getToggles()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
      );
      this.sortedRevision = this.revision;
    }
    return this.sorted;
  }

  toggle(name: string): FeatureInterface | undefined {
    return this.repository.getToggle(name);
  }

  segments(): Segment[] {
    const ids = new Set<number>();
    for (const feature of this.toggles()) {
      for (const strategy of feature.strategies ?? []) for (const id of strategy.segments ?? []) ids.add(id);
    }
    return [...ids].map((id) => this.repository.getSegment(id)).filter((s): s is Segment => s !== undefined);
  }

  clientFeatures(): ClientFeaturesResponse {
    return { version: 2, features: [...this.toggles()], segments: this.segments() };
  }

  evaluate(name: string, context: Context): SdkVariant | undefined {
    try {
      return this.unleash.getVariant(name, context);
    } catch (err) {
      this.failed(name, err);
      return undefined;
    }
  }

  /** As the SDK does not count an evaluation that threw, neither does this. */
  private failed(name: string, err: unknown): void {
    const message = err instanceof Error ? err.message : String(err);
    this.strategyErrors.error(
      `evaluating toggle "${name}" threw; answering it as disabled: ${message}`,
      name,
    );
  }

  fast(): FastEvaluation | undefined {
    // Batched usage needs the SDK's bucket (`metrics`); without it every evaluation counts itself.
    if (!this.ready || !this.metrics || this.unleash.listenerCount('impression') > 0) return undefined;
    return this.fastEvaluation;
  }

  private createFastEvaluation(): FastEvaluation {
    const client = this.unleash.sdkClient;
    const staticContext = this.staticContext;
    return {
      enhance: (context) => ({ ...staticContext, ...context }),
      resolve: (name, enhanced) => {
        this.deciding.reset();
        return resolveVariant(client, this.repository.getToggle(name), enhanced);
      },
      failed: (name, err) => this.failed(name, err),
      // Custom strategies come first in the SDK's lookup, so a custom one shadows a built-in name.
      isBuiltInStrategy: (name) => !this.customStrategies.some((s) => s.name === name),
      segment: (id) => this.repository.getSegment(id),
      decidingStrategy: (name) => this.deciding.find(this.repository.getToggle(name)?.strategies),
    };
  }

  addUsage(name: string, enabled: boolean, variant: string, times: number): void {
    const metrics = this.metrics;
    if (!metrics) {
      for (let n = 0; n < times; n++) {
        if (variant) this.unleash.countVariant(name, variant);
        this.unleash.count(name, enabled);
      }
      return;
    }
    if (metrics.disabled) return; // the SDK's count() drops counts once metrics are disabled
    metrics.increaseCounter(name, enabled, times);
    if (variant) metrics.increaseVariantCounter(name, variant, times);
  }

  beforeUsageSent(listener: () => void): () => void {
    this.usageListeners.add(listener);
    return () => this.usageListeners.delete(listener);
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.listeners.clear();
    this.repository.stop();
    await this.unleash.destroyWithFlush().catch(() => undefined);
    this.unleash.destroy();
  }
}
