import { hash } from 'node:crypto';
import {
  InMemStorageProvider,
  type ClientFeaturesResponse,
  type Context,
  type Strategy,
} from 'unleash-client';
import type { FeatureInterface, Segment, HttpOptions } from '../upstream/sdk/types';
import type { Logger } from '../../common/logging/logger';
import type { ProxyConfig } from '../config/types';
import type {
  SdkVariant,
  FastEvaluation,
  FeatureRepository,
  UpstreamStats,
} from '../upstream/feature-repository';
import { GuardedRepository } from '../upstream/sdk/guarded-repository';
import { segmentsUsedBy } from '../upstream/segments-used';
import {
  DecidingStrategy,
  ProxyUnleash,
  usageBucket,
  warnNamesAsData,
  type SdkMetrics,
} from '../upstream/sdk/internals';
import { findFaults, NO_FAULTS, type DefinitionsFaults, type ToggleFault } from '../upstream/toggle-faults';
import { resolveVariant } from '../upstream/sdk/variant';
import { RateLimitedLog } from '../../common/logging/rate-limited-log';
import { UpstreamHealth } from './upstream-health';
import type { DefinitionsBackup } from '../backup/definitions-backup';
import { limitedBootstrapProvider } from '../bootstrap/limited-bootstrap';
import type { DefinitionsSource } from '../upstream/definitions-source';
import { upstreamHeaders } from '../transport/upstream-headers';
import { copyFields } from '../context/copy-fields';
import { timerDelay } from '../../common/timers/timer-delay';

export interface UnleashRepositoryOptions {
  config: ProxyConfig;
  strategies: Strategy[];
  httpOptions: HttpOptions;
  /** Shared backup: written with every upstream answer, read at start while the upstream does not answer. */
  backup?: DefinitionsBackup;
  /** Called when the upstream refuses the API token (401/403), after it is logged. */
  onRejected?: (status: number) => void;
  /** The token's environment, named in the refusal's log line (never the token); unset: not named. */
  environment?: string;
  /**
   * Definitions from this source instead of the upstream (offline mode): nothing is fetched, no
   * bootstrap or backup is read, and no usage is sent upstream.
   */
  source?: DefinitionsSource;
}

/**
 * What `unleash-client` 6 reports while it validates a toggle of an answer it stores all the same
 * (`Repository.validateFeature`: `strategies` not a list, `variants` not a list, `enabled` not a
 * boolean).
 */
const SDK_TOGGLE_REPORT = /^Unleash Repository error: feature\.(strategies|variants|enabled) should be /;

/** What `unleash-client` 6 warns when the upstream answers its registration outside 2xx. */
const REGISTER_FAILURE = /client\/register returning (\d{3})$/;

/** The SDK needs a URL; a repository fed by a source never requests it. */
const NO_UPSTREAM_URL = 'http://offline.invalid/api/';

/** Problems named one by one in a log line (per answer or revision); the rest are counted. */
const MAX_NAMED_PROBLEMS = 20;

/** Exactly one trailing slash: the SDK resolves `client/features` against it. */
function cleanUrl(url: string): string {
  return `${url.replace(/\/+$/, '')}/`;
}

/** The one adapter around `unleash-client`: it fetches, refreshes and evaluates. */
export class UnleashFeatureRepository implements FeatureRepository {
  revision = 0;
  readonly stats: UpstreamStats = {
    lastUpdate: 0,
    lastFetch: 0,
    fetchErrors: 0,
    definitionsRefused: 0,
    togglesQuarantined: 0,
    usageReportsRefused: 0,
    registerFailures: new Map(),
  };
  private readonly unleash: ProxyUnleash;
  private readonly staticContext: Context;
  private readonly customStrategies: readonly Strategy[];
  private readonly metrics: SdkMetrics | undefined;
  /** OFREP reasons: which strategy definition enabled a toggle in the last `resolve`. */
  private readonly deciding: DecidingStrategy;
  /** Usage reports on their way to the upstream. */
  private readonly reports = new Set<Promise<void>>();
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
  /** Lost once, back once: the operator's lines about the upstream's definitions fetches. */
  readonly health: UpstreamHealth;
  private faults: DefinitionsFaults = NO_FAULTS;
  private faultsRevision = -1;
  /** Digest of the definitions last accepted as a change (`isNewContent`). */
  private contentDigest: string | undefined;
  private namedFaults = new Set<string>();
  private closing = false;
  private readonly source: DefinitionsSource | undefined;
  /** True from a refusal of the token until the upstream answers again. */
  private refusedRun = false;

  constructor({
    config,
    strategies,
    httpOptions,
    backup,
    onRejected,
    environment,
    source,
  }: UnleashRepositoryOptions) {
    this.logger = config.logger;
    this.strategyErrors = new RateLimitedLog(this.logger, 60_000);
    this.upstreamWarnings = new RateLimitedLog(this.logger, 60_000);
    const url = source ? NO_UPSTREAM_URL : cleanUrl(config.flagsUrl);
    const headers = upstreamHeaders(config.customClientHeaders, config.flagsApiToken);
    const featuresUrl = `${url}client/features`;
    const whose =
      environment === undefined ? 'the API token' : `the API token of environment "${environment}"`;
    this.health = new UpstreamHealth(
      this.logger,
      environment === undefined
        ? `the upstream ${featuresUrl}`
        : `the upstream ${featuresUrl} of environment "${environment}"`,
      () => this.ready,
    );
    const accepted = () => {
      if (!this.refusedRun) return;
      this.refusedRun = false;
      this.logger.info(`Upstream ${featuresUrl} accepted ${whose} again`);
    };
    this.repository = new GuardedRepository({
      url,
      appName: config.flagsAppName,
      instanceId: config.flagsInstanceId,
      connectionId: config.flagsInstanceId,
      projectName: config.projectName,
      project: config.projectName,
      refreshInterval: timerDelay(config.refreshInterval),
      timeout: config.upstreamRequestTimeout,
      headers,
      httpOptions,
      namePrefix: config.namePrefix,
      tags: config.tags,
      bootstrapProvider: limitedBootstrapProvider(
        (source ? undefined : config.expBootstrap) ?? {},
        config.flagsAppName,
        config.flagsInstanceId,
        config.maxStoredDefinitionsBytes,
      ),
      bootstrapOverride: false,
      // In memory by default: a backup file left by an earlier run must not make a fresh proxy ready.
      storageProvider: source
        ? new InMemStorageProvider<ClientFeaturesResponse>()
        : (backup?.storageProvider(config.storageProvider) ??
          config.storageProvider ??
          new InMemStorageProvider<ClientFeaturesResponse>()),
      mode: { type: 'polling', format: 'full' },
      onDefinitions: (fromApi) => {
        if (!fromApi) return;
        accepted();
        this.health.answered();
        backup?.save(this.clientFeatures());
      },
      onRefused: (reason) => {
        this.stats.definitionsRefused += 1;
        this.upstreamWarnings.error(
          `definitions refused (not a definitions document), keeping the last good ones: ${reason}`,
          reason,
        );
      },
      onDropped: (entries, source) => {
        const shown = entries.slice(0, MAX_NAMED_PROBLEMS).join('; ');
        const more =
          entries.length > MAX_NAMED_PROBLEMS ? ` and ${entries.length - MAX_NAMED_PROBLEMS} more` : '';
        this.upstreamWarnings.warn(
          `${source}: entries the SDK cannot store were dropped: ${shown}${more}`,
          shown,
        );
      },
      onRejected: (status, retryInMs, attempt) => {
        // One error line per run of refusals; the retries of the same run are logged at debug level.
        const line = `Upstream ${featuresUrl} rejected ${whose} (HTTP ${status}); check ${config.tokensName}. Retrying in ${Math.round(retryInMs / 1000)}s`;
        if (attempt === 1) {
          this.refusedRun = true;
          this.logger.error(`${line}; further refusals are logged at debug level until it is accepted`);
        } else this.logger.debug(line);
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
      refreshInterval: timerDelay(config.refreshInterval),
      metricsInterval: timerDelay(config.metricsInterval),
      metricsJitter: config.metricsJitter,
      customHeaders: headers,
      timeout: config.upstreamRequestTimeout,
      httpOptions,
      strategies,
      repository: this.repository,
      skipInstanceCountWarning: true,
      // fed by a source: no polling, and no usage sent anywhere
      disableAutoStart: source !== undefined,
      disableMetrics: source !== undefined,
    });
    // Batched counts reach the bucket before the SDK reads it: on its timer, on flush and on close.
    this.metrics = usageBucket(this.unleash, {
      beforeSend: () => {
        for (const listener of this.usageListeners) listener();
      },
      isClosing: () => this.closing,
      sending: (report) => {
        this.reports.add(report);
        void report.catch(() => undefined).finally(() => this.reports.delete(report));
      },
      onRefused: (status) => {
        this.stats.usageReportsRefused += 1;
        const what = status === undefined ? 'a 4xx' : `HTTP ${status}`;
        this.upstreamWarnings.warn(
          `upstream refused the proxy's usage report (${what}); its counts are dropped and the next interval reports again`,
          `usage-refused-${what}`,
        );
      },
    });
    warnNamesAsData(this.unleash);
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
      // An upstream without ETags answers every poll in full: the same definitions again are no
      // change (no new revision, no recompiled plans, no stream events), as a 304 would have been.
      if (!this.isNewContent()) {
        this.stats.lastFetch = Date.now();
        return;
      }
      this.stats.lastUpdate = Date.now();
      this.stats.lastFetch = this.stats.lastUpdate;
      this.bump();
    });
    this.repository.on('unchanged', () => {
      this.stats.lastFetch = Date.now();
      accepted();
      this.health.answered();
    });
    this.unleash.on('error', (err: unknown) => {
      const message = err instanceof Error ? err.message : String(err);
      if (/responded (401|403)\b/.test(message)) {
        this.stats.fetchErrors += 1;
        return; // logged at error level by onRejected
      }
      // A toggle the SDK's validation reports (a fetch it still stored, the toggle quarantined or
      // evaluated as the SDK does) is no failed fetch: only the warning.
      const reason = message.replace(/^Unleash (Repository|Metrics) error: /, '');
      if (message.startsWith('Unleash Repository error') && !SDK_TOGGLE_REPORT.test(message)) {
        this.stats.fetchErrors += 1;
        this.health.fetchFailed(reason);
        return;
      }
      if (this.health.otherFailed(reason)) return;
      this.upstreamWarnings.warn(`upstream: ${reason}`, message);
    });
    this.unleash.on('warn', (msg: unknown) => {
      const text = String(msg);
      if (/responded|Backing off/.test(text)) this.stats.fetchErrors += 1;
      const registerFailure = REGISTER_FAILURE.exec(text);
      if (registerFailure) {
        const status = Number(registerFailure[1]);
        this.stats.registerFailures.set(status, (this.stats.registerFailures.get(status) ?? 0) + 1);
      }
      // The poller's "responded <status>. Backing off": a failed fetch of the definitions.
      if (text.startsWith(featuresUrl) && /responded/.test(text)) return this.health.fetchFailed(text);
      if (this.health.otherFailed(text)) return;
      this.upstreamWarnings.warn(`upstream: ${text}`, text);
    });
    this.source = source;
    source?.start((definitions) => this.repository.save(definitions, false));
  }

  /**
   * True when the SDK's definitions differ from those last accepted as a change: their client-API
   * form (toggles sorted by name, the segments they use), digested once per full answer.
   */
  private isNewContent(): boolean {
    const features = sortedByName(this.repository.getToggles());
    const segments = segmentsUsedBy(features, (id) => this.repository.getSegment(id));
    // UTF-16 code units: UTF-8 would make lone surrogates that the SDK tells apart look the same
    const json = JSON.stringify({ features, segments });
    const digest = hash('sha256', Buffer.from(json, 'utf16le'), 'base64url');
    if (digest === this.contentDigest) return false;
    this.contentDigest = digest;
    return true;
  }

  private bump(): void {
    this.revision += 1;
    this.checkFaults();
    for (const listener of this.listeners) listener();
  }

  /** Finds the revision's quarantined and irregular toggles, and names the quarantined ones once. */
  private checkFaults(): void {
    const faults = findFaults(
      this.toggles(),
      (name) => !this.customStrategies.some((s) => s.name === name),
      (id) => this.repository.getSegment(id),
    );
    this.faults = faults;
    this.faultsRevision = this.revision;
    this.stats.togglesQuarantined = faults.quarantined.size;
    // Named once: a fault already named for the revision before (the same toggle, the same field) is not repeated.
    const before = this.namedFaults;
    this.namedFaults = new Set([...faults.quarantined.values()].map((f) => f.message));
    const fresh = [...faults.quarantined.values()].filter((f) => !before.has(f.message));
    for (const fault of fresh.slice(0, MAX_NAMED_PROBLEMS)) {
      this.logger.error(
        `quarantined: ${fault.message}; it is answered disabled until the upstream changes it`,
      );
    }
    if (fresh.length > MAX_NAMED_PROBLEMS)
      this.logger.error(`quarantined: ${fresh.length - MAX_NAMED_PROBLEMS} more toggles of this revision`);
  }

  private currentFaults(): DefinitionsFaults {
    if (this.faultsRevision !== this.revision) this.checkFaults();
    return this.faults;
  }

  fault(name: string): ToggleFault | undefined {
    return this.currentFaults().quarantined.get(name);
  }

  isIrregular(name: string): boolean {
    return this.currentFaults().irregular.has(name);
  }

  isReady(): boolean {
    return this.ready;
  }

  whenReady(): Promise<void> {
    return this.readyPromise;
  }

  toggles(): readonly FeatureInterface[] {
    if (this.sortedRevision !== this.revision) {
      this.sorted = Object.freeze(sortedByName(this.repository.getToggles()));
      this.sortedRevision = this.revision;
    }
    return this.sorted;
  }

  toggle(name: string): FeatureInterface | undefined {
    return this.repository.getToggle(name);
  }

  segments(): Segment[] {
    return segmentsUsedBy(this.toggles(), (id) => this.repository.getSegment(id));
  }

  clientFeatures(): ClientFeaturesResponse {
    return { version: 2, features: [...this.toggles()], segments: this.segments() };
  }

  answerDefinitions(): ClientFeaturesResponse {
    return this.clientFeatures();
  }

  evaluate(name: string, context: Context): SdkVariant | undefined {
    if (this.fault(name)) return undefined;
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
      // `{ ...staticContext, ...context }`, as the SDK builds it (`copy-fields.ts` says why not the spread)
      enhance: (context) => copyFields(copyFields<Context>({}, staticContext), context),
      resolve: (name, enhanced) => {
        this.deciding.reset();
        return resolveVariant(client, this.repository.getToggle(name), enhanced);
      },
      resolveFeature: (feature, enhanced) => resolveVariant(client, feature, enhanced),
      failed: (name, err) => this.failed(name, err),
      // Custom strategies come first in the SDK's lookup, so a custom one shadows a built-in name.
      isBuiltInStrategy: (name) => !this.customStrategies.some((s) => s.name === name),
      segment: (id) => this.repository.getSegment(id),
      feature: (name) => this.repository.getToggle(name),
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
    this.closing = true;
    this.source?.close();
    this.listeners.clear();
    this.repository.stop();
    await this.unleash.destroyWithFlush().catch(() => undefined);
    this.unleash.destroy();
    // A report sent on the SDK's timer just before may still be on its way: its counts are the
    // proxy's too. Waited for up to REPORTS_ON_CLOSE_MS (the SDK gives each request its own timeout).
    if (this.reports.size > 0) await settledWithin([...this.reports], REPORTS_ON_CLOSE_MS);
  }
}

function sortedByName(toggles: readonly FeatureInterface[]): FeatureInterface[] {
  return [...toggles].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** How long a close waits for usage reports still on their way. */
const REPORTS_ON_CLOSE_MS = 5_000;

/** Resolves once every promise settled, or after `ms`, whichever comes first. */
async function settledWithin(promises: readonly Promise<unknown>[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref();
  });
  await Promise.race([Promise.allSettled(promises), late]);
  clearTimeout(timer);
}
