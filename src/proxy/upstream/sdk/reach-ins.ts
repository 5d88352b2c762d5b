import type { Unleash } from 'unleash-client';
import { defaultVariant, selectVariant } from 'unleash-client/lib/variant';
import Repository from 'unleash-client/lib/repository';
import { sdkHostname, sdkIpAddress, sdkRe2, sdkSemver } from './libraries';
import { buildHeaders, defaultStrategies, post, resolveBootstrapProvider } from './modules';

/**
 * Every private part of `unleash-client` (6.12.1, pinned exactly in package.json) the proxy relies
 * on, one row each: what it is, what the proxy relies on, where. Each row's `check` looks at a real
 * SDK (`SdkInstance`: an `Unleash` built with a repository of the SDK's own class, as the proxy
 * builds it) and answers what is missing, or undefined when the SDK still has it.
 * test/proxy/upstream/sdk-contract.test.ts runs every check: run it after changing the pin.
 * Types taken from `unleash-client/lib/...` are not listed: `sdk/types.ts` re-exports them and the
 * compiler checks them.
 */
export interface SdkInstance {
  unleash: Unleash;
  /** The repository given to `unleash` (option `repository`), of the SDK's `Repository` class. */
  repository: Repository;
}

export interface ReachIn {
  /** The private thing, as `Owner#member` or `module#export`. */
  name: string;
  /** What the proxy relies on it being. */
  reliesOn: string;
  /** Where the proxy uses it (files in this folder). */
  usedBy: string;
  /** What is missing from `sdk`, or undefined when it still has what the proxy relies on. */
  check(sdk: SdkInstance): string | undefined;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null;

/** The names among `members` that are not functions on `target`. */
function missingFunctions(target: unknown, members: readonly string[]): string[] {
  return members.filter((m) => typeof (isRecord(target) ? Reflect.get(target, m) : undefined) !== 'function');
}

function functionsProblem(what: string, target: unknown, members: readonly string[]): string | undefined {
  if (!isRecord(target)) return `${what} is not an object (found ${typeof target})`;
  const missing = missingFunctions(target, members);
  return missing.length === 0 ? undefined : `${what} has no method ${missing.join(', ')}`;
}

const clientOf = (sdk: SdkInstance): unknown => Reflect.get(sdk.unleash, 'client');
const metricsOf = (sdk: SdkInstance): unknown => Reflect.get(sdk.unleash, 'metrics');

export const REACH_INS: readonly ReachIn[] = [
  {
    name: 'Unleash#client',
    reliesOn:
      'the evaluation client field, an instance with isEnabled/getVariant/isFeatureEnabled (read as ProxyUnleash.sdkClient)',
    usedBy: 'internals.ts (ProxyUnleash), variant.ts',
    check: (sdk) =>
      functionsProblem('Unleash#client', clientOf(sdk), ['isEnabled', 'getVariant', 'isFeatureEnabled']),
  },
  {
    name: 'Client#isFeatureEnabled',
    reliesOn:
      '(feature, context, fallback) => { enabled, variant? }: dependencies, strategies, constraints and strategy variants of one toggle object',
    usedBy: 'variant.ts (resolveVariant)',
    check: (sdk) => {
      const client = clientOf(sdk);
      const fn: unknown = isRecord(client) ? client.isFeatureEnabled : undefined;
      if (typeof fn !== 'function') return 'Client#isFeatureEnabled is not a function';
      const feature = {
        name: 'contract',
        enabled: true,
        strategies: [{ name: 'default', parameters: {}, constraints: [] }],
      };
      const result: unknown = Reflect.apply(fn, client, [feature, {}, () => false]);
      if (!isRecord(result) || result.enabled !== true)
        return `Client#isFeatureEnabled answered ${JSON.stringify(result)} for an enabled toggle with the default strategy, not { enabled: true }`;
      return undefined;
    },
  },
  {
    name: 'Client#strategies',
    reliesOn:
      'an array of Strategy instances (name, getResult, isEnabled) the client looks strategies up in; replaced by wrapped copies',
    usedBy: 'internals.ts (DecidingStrategy)',
    check: (sdk) => {
      const client = clientOf(sdk);
      const strategies: unknown = isRecord(client) ? client.strategies : undefined;
      if (!Array.isArray(strategies)) return 'Client#strategies is not an array';
      for (const s of strategies as unknown[]) {
        const problem = functionsProblem('a strategy of Client#strategies', s, ['getResult', 'isEnabled']);
        if (problem) return problem;
        if (typeof (s as Record<string, unknown>).name !== 'string')
          return 'a strategy of Client#strategies has no string name';
      }
      return undefined;
    },
  },
  {
    name: 'Client#warnedStrategies, Client#warnedDependencies',
    reliesOn: 'plain objects keyed by names; replaced by prototype-less maps',
    usedBy: 'internals.ts (warnNamesAsData)',
    check: (sdk) => {
      const client = clientOf(sdk);
      if (!isRecord(client)) return 'Unleash#client is not an object';
      const missing = ['warnedStrategies', 'warnedDependencies'].filter((m) => !isRecord(client[m]));
      return missing.length === 0 ? undefined : `Unleash#client has no object ${missing.join(', ')}`;
    },
  },
  {
    name: 'Unleash#metrics',
    reliesOn:
      'the usage-metrics collector: disabled (boolean), increaseCounter, increaseVariantCounter, sendMetrics',
    usedBy: 'internals.ts (usageBucket), sources/unleash-repository.ts (batched counting through SdkMetrics)',
    check: (sdk) => {
      const metrics = metricsOf(sdk);
      const problem = functionsProblem('Unleash#metrics', metrics, [
        'increaseCounter',
        'increaseVariantCounter',
        'sendMetrics',
      ]);
      if (problem) return problem;
      return typeof (metrics as Record<string, unknown>).disabled === 'boolean'
        ? undefined
        : 'Unleash#metrics has no boolean disabled';
    },
  },
  {
    name: 'Metrics#startTimer, Metrics#configurationError, Metrics#metricsInterval',
    reliesOn:
      'the report timer, the 401/403 handler (url, status) and the interval (number) it zeroes; wrapped so a refused report is dropped and the timer goes on',
    usedBy: 'internals.ts (usageBucket)',
    check: (sdk) => {
      const metrics = metricsOf(sdk);
      const problem = functionsProblem('Unleash#metrics', metrics, ['startTimer', 'configurationError']);
      if (problem) return problem;
      return typeof (metrics as Record<string, unknown>).metricsInterval === 'number'
        ? undefined
        : 'Unleash#metrics has no number metricsInterval';
    },
  },
  {
    name: 'Metrics#bucket, Metrics#createBucket, Metrics#resetBucket, Metrics#assertBucket',
    reliesOn:
      'the counts as { start, stop, toggles: { [name]: { yes, no, variants } } } made by createBucket and filled through assertBucket(name); replaced by prototype-less maps',
    usedBy: 'internals.ts (usageBucket, countNamesAsData)',
    check: (sdk) => {
      const metrics = metricsOf(sdk);
      const problem = functionsProblem('Unleash#metrics', metrics, [
        'createBucket',
        'resetBucket',
        'assertBucket',
      ]);
      if (problem) return problem;
      const bucket = (metrics as Record<string, unknown>).bucket;
      return isRecord(bucket) && isRecord(bucket.toggles)
        ? undefined
        : 'Unleash#metrics has no bucket with a toggles object';
    },
  },
  {
    name: 'Repository#data, Repository#convertToMap, Repository#validateFeature',
    reliesOn:
      'the toggles kept as an object keyed by name (data), built by convertToMap(features) after validateFeature(feature); replaced by prototype-less maps',
    usedBy: 'internals.ts (keepNamesAsData)',
    check: (sdk) => {
      const problem = functionsProblem('Repository', sdk.repository, ['convertToMap', 'validateFeature']);
      if (problem) return problem;
      return isRecord(Reflect.get(sdk.repository, 'data')) ? undefined : 'Repository#data is not an object';
    },
  },
  {
    name: 'Repository#fetcher.options.onModeChange',
    reliesOn:
      "the fetcher's options object (shared by the polling and adaptive fetchers) with the callback that switches to streaming; unset to keep polling",
    usedBy: 'guarded-repository.ts (keepPolling)',
    check: (sdk) => {
      const fetcher: unknown = Reflect.get(sdk.repository, 'fetcher');
      if (!isRecord(fetcher)) return 'Repository#fetcher is not an object';
      const options = fetcher.options;
      if (!isRecord(options)) return 'Repository#fetcher has no options object';
      return typeof options.onModeChange === 'function'
        ? undefined
        : 'Repository#fetcher.options has no onModeChange function';
    },
  },
  {
    name: 'lib/repository: Repository (subclassed), Repository#etag, Repository#save',
    reliesOn:
      'the class the proxy extends: save(response, fromApi) for every answer and bootstrap (overridden), etag (cleared after a refused answer), fetch and stop',
    usedBy: 'guarded-repository.ts (GuardedRepository)',
    check: (sdk) => {
      if (typeof Repository !== 'function') return 'lib/repository has no default export class';
      if (!(sdk.repository instanceof Repository))
        return 'lib/repository default export is not the class Unleash uses';
      const problem = functionsProblem('Repository', sdk.repository, ['save', 'fetch', 'stop', 'getToggle']);
      if (problem) return problem;
      return 'etag' in sdk.repository ? undefined : 'Repository has no etag';
    },
  },
  {
    name: 'lib/variant: selectVariant, defaultVariant',
    reliesOn:
      "selectVariant(feature, context) => variant | null (feature variants, overrides, stickiness); defaultVariant { name: 'disabled', enabled: false }",
    usedBy: 'variant.ts (resolveVariant, DISABLED_ANSWER, ENABLED_ANSWER)',
    check: () => {
      if (typeof selectVariant !== 'function') return 'lib/variant has no function selectVariant';
      const v = defaultVariant as unknown;
      return isRecord(v) && v.name === 'disabled' && v.enabled === false
        ? undefined
        : `lib/variant defaultVariant is ${JSON.stringify(v)}, not { name: 'disabled', enabled: false }`;
    },
  },
  {
    name: 'semver, ip-address, re2js (as unleash-client loads them)',
    reliesOn:
      "the libraries the SDK's operators and remoteAddress strategy call: semver's valid/eq/gt/gte/lt/lte and SemVer, ip-address's Address4/Address6 (isValid), re2js's RE2JS.compile",
    usedBy: 'libraries.ts → engine/compiled/constraints.ts, engine/compiled/strategies.ts',
    check: () =>
      functionsProblem('semver', sdkSemver(), ['valid', 'eq', 'gt', 'gte', 'lt', 'lte', 'SemVer']) ??
      functionsProblem('ip-address', sdkIpAddress(), ['Address4', 'Address6']) ??
      (typeof sdkIpAddress().Address4.isValid === 'function' &&
      typeof sdkIpAddress().Address6.isValid === 'function'
        ? undefined
        : "ip-address's Address4 or Address6 has no static isValid") ??
      (typeof sdkRe2().RE2JS.compile === 'function' ? undefined : "re2js's RE2JS has no static compile"),
  },
  {
    name: 'ApplicationHostnameStrategy#hostname',
    reliesOn: 'the lower-cased host name the built-in applicationHostname strategy compares with (a string)',
    usedBy: 'libraries.ts (sdkHostname) → engine/compiled/strategies.ts',
    check: () =>
      sdkHostname() === undefined
        ? 'the applicationHostname strategy of lib/strategy defaultStrategies has no string hostname'
        : undefined,
  },
  {
    name: 'lib/request: post, buildHeaders',
    reliesOn:
      "the SDK's HTTP POST (usage reports, token validation) and its request headers (bootstrap fetch)",
    usedBy:
      'modules.ts → client-metrics/upstream-transport.ts, token-validation/validation-client.ts, bootstrap/limited-bootstrap.ts',
    check: () => {
      const missing = [post, buildHeaders].filter((f) => typeof f !== 'function');
      return missing.length === 0 ? undefined : 'lib/request lacks post or buildHeaders';
    },
  },
  {
    name: 'lib/strategy: defaultStrategies',
    reliesOn: 'the array of built-in strategy instances, to refuse plugins named like one',
    usedBy: 'modules.ts → plugins/load-plugins.ts',
    check: () =>
      Array.isArray(defaultStrategies) && defaultStrategies.length > 0
        ? undefined
        : 'lib/strategy defaultStrategies is not a non-empty array',
  },
  {
    name: 'lib/repository/bootstrap-provider: resolveBootstrapProvider',
    reliesOn: '(options, appName, instanceId) => BootstrapProvider, the bootstrap the SDK would use',
    usedBy: 'modules.ts → bootstrap/limited-bootstrap.ts',
    check: () =>
      typeof resolveBootstrapProvider === 'function'
        ? undefined
        : 'lib/repository/bootstrap-provider has no function resolveBootstrapProvider',
  },
];
