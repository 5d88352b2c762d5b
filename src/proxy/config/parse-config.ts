import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { ConfigError, missingLine, resolveOptions } from '../../common/config/resolve';
import { createLogger, type Logger, type LogLevel } from '../../common/logging/logger';
import { scrubbingLogger, secretValues, urlPasswords } from '../../common/logging/redact';
import { keyVaryOf } from '../auth/key-vary';
import { parseUnleashToken } from '../token-validation/unleash-token';
import { PROXY_OPTIONS } from './options';
import type { ProxyConfig, ProxyOptions } from './types';

type Env = Record<string, string | undefined>;

/** Unleash Edge's variable names read as aliases; the start-up line names them apart. */
const EDGE_NAMES: ReadonlySet<string> = new Set(['UPSTREAM_URL', 'TOKENS', 'PRETRUSTED_TOKENS', 'REDIS_URL']);

/** Edge's `UPSTREAM_URL` is the server's base URL: the client API is under `/api`. */
function apiUrlOf(url: string): string {
  const trimmed = url.replace(/\/+$/, '');
  return /\/api$/.test(trimmed) ? trimmed : `${trimmed}/api`;
}

/** `clientKeys (FLAGS_PROXY_CLIENT_KEYS)`: an option as its problems name it, with its variables. */
function optionName(key: string): string {
  const env = PROXY_OPTIONS.find((spec) => spec.key === key)?.env ?? [];
  return env.length > 0 ? `${key} (${env.join(' or ')})` : key;
}

/**
 * Client keys are public (every web page carries one); a server-side SDK token reads every
 * definition at /proxy/client/features. A value that is both would hand all definitions to any
 * page, so the configuration is refused, naming both options and never the value.
 */
function sharedSecretProblems(get: <T>(key: string) => T): string[] {
  const tokens = new Set(get<string[] | undefined>('expServerSideSdkConfig.tokens') ?? []);
  if (tokens.size === 0) return [];
  return ['clientKeys', 'proxySecrets']
    .filter((key) => (get<string[] | undefined>(key) ?? []).some((value) => tokens.has(value)))
    .map(
      (key) =>
        `A value of ${optionName(key)} is also a server-side SDK token in ${optionName('expServerSideSdkConfig.tokens')}: client keys are public, so that token would let any web page read every flag definition; use different values`,
    );
}

/**
 * The one place proxy configuration is read: options given in code win over the environment, which
 * wins over defaults. Throws a ConfigError naming every missing or malformed option.
 */
export function parseConfig(options: ProxyOptions = {}, env: Env = process.env): ProxyConfig {
  const { values, problems, missing, sources } = resolveOptions(PROXY_OPTIONS, options, env);
  const get = <T>(key: string): T => values.get(key) as T;

  // clientKeys is required unless the deprecated proxySecrets supplies the keys.
  const deprecatedKeys = get<string[] | undefined>('proxySecrets');
  let clientKeys = get<string[] | undefined>('clientKeys');
  const usedDeprecated = clientKeys === undefined && deprecatedKeys !== undefined;
  if (usedDeprecated) {
    clientKeys = deprecatedKeys;
    const before = missingLine(missing);
    const after = missingLine(missing.filter((spec) => spec.key !== 'clientKeys'));
    const idx = problems.findIndex((line) => line === before);
    if (idx >= 0 && after === undefined) problems.splice(idx, 1);
    else if (idx >= 0 && after !== undefined) problems[idx] = after;
  }
  const tokens = (get<string | undefined>('flagsApiToken') ?? '')
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const validates =
    get<boolean>('upstreamTokenValidation') && tokens.some((t) => parseUnleashToken(t) !== undefined);
  // clientKeys is optional only under Unleash Edge's contract (UPSTREAM_URL + TOKENS) while
  // unconfigured Unleash tokens are validated upstream; under the specification's names (and the
  // reference proxy's, and in code) it is one of the three required options.
  const edgeNamed =
    sources.get('flagsUrl')?.name === 'UPSTREAM_URL' && sources.get('flagsApiToken')?.name === 'TOKENS';
  if (clientKeys === undefined && validates && edgeNamed) {
    clientKeys = [];
    const before = missingLine(missing);
    const after = missingLine(missing.filter((spec) => spec.key !== 'clientKeys'));
    const idx = problems.findIndex((line) => line === before);
    if (idx >= 0 && after === undefined) problems.splice(idx, 1);
    else if (idx >= 0 && after !== undefined) problems[idx] = after;
  }
  if (get<string | undefined>('flagsApiToken') !== undefined && tokens.length === 0)
    problems.push(`${optionName('flagsApiToken')} holds no token`);
  problems.push(...sharedSecretProblems(get));
  if (problems.length > 0) throw new ConfigError(problems);

  const logLevel = get<LogLevel>('logLevel');
  const useJsonLogger = get<boolean>('useJsonLogger');
  // Every line goes through a scrubber of the configured secrets, whichever logger writes it.
  const logger: Logger = scrubbingLogger(
    get<Logger | undefined>('logger') ??
      createLogger({ level: logLevel, json: useJsonLogger, name: 'flags-proxy' }),
    [
      ...secretValues(PROXY_OPTIONS, values),
      ...tokens,
      ...Object.values(options.expBootstrap?.urlHeaders ?? {}),
      ...['flagsUrl', 'httpProxy', 'httpsProxy', 'redisUrl', 'expBootstrap.url'].flatMap((key) =>
        urlPasswords(get(key)),
      ),
      ...urlPasswords(options.expBootstrap?.url),
    ],
  );
  if (usedDeprecated) {
    const source = sources.get('proxySecrets');
    const given = source?.alias ? ` (given as ${source.name})` : '';
    logger.warn(
      `proxySecrets / FLAGS_PROXY_SECRETS is deprecated${given}; use clientKeys / FLAGS_PROXY_CLIENT_KEYS instead`,
    );
  }
  const allAliases = [...sources.values()].filter((source) => source.alias).map((source) => source.name);
  const aliases = allAliases.filter((name) => !EDGE_NAMES.has(name));
  const edgeAliases = allAliases.filter((name) => EDGE_NAMES.has(name));
  if (edgeAliases.length > 0) {
    logger.info(`Configuration read under Unleash Edge's names: ${edgeAliases.join(', ')}`);
  }
  if (aliases.length > 0) {
    logger.info(`Configuration read under the reference Unleash proxy's names: ${aliases.join(', ')}`);
  }

  const bootstrapUrl = get<string | undefined>('expBootstrap.url');
  const bootstrapAuth = get<string | undefined>('expBootstrap.urlHeaders.Authorization');
  const bootstrapInCode = options.expBootstrap;
  const expBootstrap =
    bootstrapUrl !== undefined || bootstrapInCode !== undefined
      ? {
          ...bootstrapInCode,
          ...(bootstrapUrl !== undefined ? { url: bootstrapUrl } : {}),
          ...(bootstrapAuth !== undefined
            ? { urlHeaders: { ...bootstrapInCode?.urlHeaders, Authorization: bootstrapAuth } }
            : {}),
        }
      : undefined;

  return {
    flagsUrl: sources.get('flagsUrl')?.name === 'UPSTREAM_URL' ? apiUrlOf(get('flagsUrl')) : get('flagsUrl'),
    flagsApiToken: tokens[0],
    flagsApiTokens: tokens,
    clientKeys: clientKeys as string[],
    port: get('port'),
    workers: get('workers'),
    proxyBasePath: get('proxyBasePath'),
    flagsAppName: get('flagsAppName'),
    flagsInstanceId:
      get<string | undefined>('flagsInstanceId') ?? `flags-proxy-${hostname()}-${randomUUID().slice(0, 8)}`,
    refreshInterval: get('refreshInterval'),
    metricsInterval: get('metricsInterval'),
    metricsJitter: get('metricsJitter'),
    environment: get('environment'),
    projectName: get('projectName'),
    logger,
    useJsonLogger,
    logLevel,
    customStrategies: get('customStrategies'),
    trustProxy: get('trustProxy'),
    namePrefix: get('namePrefix'),
    tags: get('tags'),
    clientKeysHeaderName: get('clientKeysHeaderName'),
    keyVary: keyVaryOf(get('clientKeysHeaderName')),
    storageProvider: get('storageProvider'),
    redisUrl: get('redisUrl'),
    redisKeyPrefix: get('redisKeyPrefix'),
    enableOAS: get('enableOAS'),
    enableAllEndpoint: get('enableAllEndpoint'),
    cors: {
      allowedHeaders: get('cors.allowedHeaders'),
      credentials: get('cors.credentials'),
      exposedHeaders: get('cors.exposedHeaders'),
      maxAge: get('cors.maxAge'),
      methods: get('cors.methods'),
      optionsSuccessStatus: get('cors.optionsSuccessStatus'),
      origin: get('cors.origin'),
      preflightContinue: get('cors.preflightContinue'),
    },
    httpOptions: { rejectUnauthorized: get('httpOptions.rejectUnauthorized') },
    httpProxy: get('httpProxy'),
    httpsProxy: get('httpsProxy'),
    noProxy: get('noProxy'),
    maxBodySize: get('maxBodySize'),
    maxContextProperties: get('maxContextProperties'),
    maxContextValueLength: get('maxContextValueLength'),
    maxContextSize: get('maxContextSize'),
    prometheusCacheInterval: get('prometheusCacheInterval'),
    maxStreams: get('maxStreams'),
    maxStoredDefinitionsBytes: get('maxStoredDefinitionsBytes'),
    streamHeartbeatInterval: get('streamHeartbeatInterval'),
    expBootstrap,
    expServerSideSdkConfig: { tokens: get('expServerSideSdkConfig.tokens') },
    expCustomEnrichers: get('expCustomEnrichers'),
    upstreamTokenValidation: validates,
    tokenRevalidateInterval: get('tokenRevalidateInterval'),
    disableMetricsEndpoint: get('disableMetricsEndpoint'),
    disableMetricsBatchEndpoint: get('disableMetricsBatchEndpoint'),
    disableTokensEndpoint: get('disableTokensEndpoint'),
    disableFeaturesEndpoint: get('disableFeaturesEndpoint'),
  };
}
