import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { ConfigError, missingLine, resolveOptions, type OptionSource } from '../../common/config/resolve';
import { createLogger, type Logger, type LogLevel } from '../../common/logging/logger';
import { scrubbingLogger, secretValues, urlPasswords } from '../../common/logging/redact';
import { keyVaryOf } from '../auth/key-vary';
import { resolveOffline } from '../offline/offline-config';
import { configuredShortSecrets } from './short-secrets';
import { parseUnleashToken } from '../token-validation/unleash-token';
import type { CidrRange } from '../access/address-list';
import { contractOf, EDGE_PORT } from './contract';
import { jsonFromLogFormat, levelFromRustLog } from './edge-logging';
import { edgeMissingLines, tokensProblems, withoutAliasNote } from './edge-problems';
import { unsupportedEdgeVariables } from './edge-variables';
import { PROXY_OPTIONS } from './options';
import type { ClientIdentity, ProxyConfig, ProxyOptions } from './types';

type Env = Record<string, string | undefined>;

/** Unleash Edge's variable names read as aliases; the start-up line names them apart. */
const EDGE_NAMES: ReadonlySet<string> = new Set([
  'UPSTREAM_URL',
  'TOKENS',
  'PRETRUSTED_TOKENS',
  'REDIS_URL',
  'BASE_PATH',
  'TOKEN_HEADER',
  'APP_NAME',
  'INSTANCE_ID',
]);

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
function sharedSecretProblems(
  get: <T>(key: string) => T,
  nameOf: (key: string) => string = optionName,
): string[] {
  const tokens = new Set(get<string[] | undefined>('expServerSideSdkConfig.tokens') ?? []);
  if (tokens.size === 0) return [];
  return ['clientKeys', 'proxySecrets']
    .filter((key) => (get<string[] | undefined>(key) ?? []).some((value) => tokens.has(value)))
    .map(
      (key) =>
        `A value of ${nameOf(key)} is also a server-side SDK token in ${nameOf('expServerSideSdkConfig.tokens')}: client keys are public, so that token would let any web page read every flag definition; use different values`,
    );
}

/**
 * The client identity towards the upstream, in Unleash Edge's order (PKCS#12, then the PKCS#8
 * pair, then one PEM file); the forms it does not use are named in `ignored`.
 */
function identityOf(
  get: <T>(key: string) => T,
  problems: string[],
): { identity: ClientIdentity | undefined; ignored: string[] } {
  const pkcs12 = get<string | undefined>('clientIdentity.pkcs12File');
  const cert = get<string | undefined>('clientIdentity.pkcs8CertificateFile');
  const key = get<string | undefined>('clientIdentity.pkcs8KeyFile');
  const pem = get<string | undefined>('clientIdentity.pemFile');
  if ((cert === undefined) !== (key === undefined)) {
    problems.push(
      'PKCS8_CLIENT_CERTIFICATE_FILE and PKCS8_CLIENT_KEY_FILE go together: give both files of the client identity, or neither',
    );
  }
  const forms: Array<[string, ClientIdentity | undefined]> = [
    [
      'PKCS12_IDENTITY_FILE',
      pkcs12 === undefined
        ? undefined
        : { kind: 'pkcs12', file: pkcs12, passphrase: get('clientIdentity.pkcs12Passphrase') },
    ],
    [
      'PKCS8_CLIENT_CERTIFICATE_FILE',
      cert === undefined || key === undefined
        ? undefined
        : { kind: 'pkcs8', certificateFile: cert, keyFile: key },
    ],
    ['PEM_CERT_FILE', pem === undefined ? undefined : { kind: 'pem', file: pem }],
  ];
  const given = forms.filter(([, identity]) => identity !== undefined);
  return { identity: given[0]?.[1], ignored: given.slice(1).map(([name]) => name) };
}

/**
 * Unleash Edge's `RUST_LOG` and `LOG_FORMAT`, when ours (`LOG_LEVEL`, `JSON_LOGGER`, or the options
 * in code) are not given; a value that cannot be read is a problem naming the variable.
 */
function edgeLogging(
  env: Env,
  sources: ReadonlyMap<string, OptionSource>,
  problems: string[],
): { level?: LogLevel; json?: boolean } {
  const result: { level?: LogLevel; json?: boolean } = {};
  const rustLog = env.RUST_LOG;
  if (rustLog !== undefined && rustLog !== '') {
    const parsed = levelFromRustLog(rustLog);
    if (!parsed.ok) problems.push(`Invalid RUST_LOG=${JSON.stringify(rustLog)}: ${parsed.problem}`);
    else if (!sources.has('logLevel')) result.level = parsed.value;
  }
  const format = env.LOG_FORMAT;
  if (format !== undefined && format !== '') {
    const parsed = jsonFromLogFormat(format);
    if (!parsed.ok) problems.push(`Invalid LOG_FORMAT=${JSON.stringify(format)}: ${parsed.problem}`);
    else if (!sources.has('useJsonLogger')) result.json = parsed.value;
  }
  return result;
}

/**
 * The one place proxy configuration is read: options given in code win over the environment, which
 * wins over defaults. Throws a ConfigError naming every missing or malformed option.
 */
export function parseConfig(options: ProxyOptions = {}, env: Env = process.env): ProxyConfig {
  const { values, problems, missing, sources } = resolveOptions(PROXY_OPTIONS, options, env);
  const get = <T>(key: string): T => values.get(key) as T;
  const contract = contractOf(env, options);

  // Required options some configurations do without: the missing-options line is rewritten.
  let stillMissing = missing;
  const notRequired = (keys: readonly string[]) => {
    const before = missingLine(stillMissing);
    stillMissing = stillMissing.filter((spec) => !keys.includes(spec.key));
    const after = missingLine(stillMissing);
    const idx = problems.findIndex((line) => line === before);
    if (idx >= 0 && after === undefined) problems.splice(idx, 1);
    else if (idx >= 0 && after !== undefined) problems[idx] = after;
  };
  const offline = resolveOffline(get, sources);
  notRequired(offline.notRequired);
  problems.push(...offline.problems);
  const offlineMode = offline.notRequired.length > 0;

  // clientKeys is required unless the deprecated proxySecrets supplies the keys.
  const deprecatedKeys = get<string[] | undefined>('proxySecrets');
  let clientKeys = get<string[] | undefined>('clientKeys');
  const usedDeprecated = clientKeys === undefined && deprecatedKeys !== undefined;
  if (usedDeprecated) {
    clientKeys = deprecatedKeys;
    notRequired(['clientKeys']);
  }
  // Offline mode's frontend tokens are client keys; nothing upstream is read.
  if (offline.offline) clientKeys = [...(clientKeys ?? []), ...offline.offline.frontendTokens];
  const tokens = offlineMode
    ? []
    : (get<string | undefined>('flagsApiToken') ?? '')
        .split(',')
        .map((t) => t.trim())
        .filter((t) => t !== '');
  const validates =
    get<boolean>('upstreamTokenValidation') && tokens.some((t) => parseUnleashToken(t) !== undefined);
  const tokensSource = sources.get('flagsApiToken');
  const tokensGiven = get<string | undefined>('flagsApiToken') !== undefined;
  const tokenProblems: string[] = [];
  if (!offlineMode && tokensGiven && tokens.length === 0)
    tokenProblems.push(
      contract === 'edge'
        ? `${tokensSource?.name ?? 'TOKENS'} holds no token: give comma-separated tokens, each \`<project>:<environment>.<secret>\``
        : `${optionName('flagsApiToken')} holds no token`,
    );
  else if (!offlineMode && contract === 'edge' && tokensSource?.name === 'TOKENS')
    tokenProblems.push(...tokensProblems(get<string>('flagsApiToken'), tokensSource));
  problems.push(...tokenProblems);
  // clientKeys is optional only under Unleash Edge's contract while unconfigured Unleash tokens
  // are validated upstream (and not asked for while TOKENS itself is missing or malformed: one
  // problem at a time); under the specification's names (and the reference proxy's, and in code)
  // it is one of the three required options.
  const tokensUnusable = !tokensGiven || tokenProblems.length > 0;
  if (clientKeys === undefined && contract === 'edge' && (validates || tokensUnusable)) {
    clientKeys = [];
    notRequired(['clientKeys']);
  }
  // Under Edge's contract, options are named by the variable given (PRETRUSTED_TOKENS, not clientKeys).
  const edgeName = (key: string) => sources.get(key)?.name ?? optionName(key);
  problems.push(...sharedSecretProblems(get, contract === 'edge' ? edgeName : optionName));
  const tls = {
    enable: get<boolean>('tls.enable'),
    serverCert: get<string | undefined>('tls.serverCert'),
    serverKey: get<string | undefined>('tls.serverKey'),
    serverPort: get<number>('tls.serverPort'),
    redirectHttpToHttps: get<boolean>('tls.redirectHttpToHttps'),
  };
  if (tls.enable && (tls.serverCert === undefined || tls.serverKey === undefined)) {
    problems.push(
      'TLS_ENABLE=true needs TLS_SERVER_CERT and TLS_SERVER_KEY (PEM files of the HTTPS listener)',
    );
  }
  if (tls.redirectHttpToHttps && !tls.enable) {
    problems.push(
      'REDIRECT_HTTP_TO_HTTPS=true needs TLS_ENABLE=true (with TLS_SERVER_CERT and TLS_SERVER_KEY): without HTTPS there is nothing to redirect to',
    );
  }
  const { identity, ignored: ignoredIdentities } = identityOf(get, problems);
  const timeoutSeconds = get<number | undefined>('upstreamRequestTimeout');
  if (timeoutSeconds === 0) problems.push('UPSTREAM_REQUEST_TIMEOUT must be a positive number of seconds');
  const logging = edgeLogging(env, sources, problems);
  if (problems.length > 0) {
    if (contract === 'specification') throw new ConfigError(problems);
    // Edge's words: one line per missing option, no counterpart of the specification's names.
    const missingAt = problems.indexOf(missingLine(stillMissing) ?? '');
    const lines = problems.map(withoutAliasNote);
    if (missingAt >= 0) lines.splice(missingAt, 1, ...edgeMissingLines(stillMissing));
    throw new ConfigError(lines);
  }
  const customClientHeaders = get<Record<string, string>>('customClientHeaders');

  const logLevel = logging.level ?? get<LogLevel>('logLevel');
  const useJsonLogger = logging.json ?? get<boolean>('useJsonLogger');
  // Every line goes through a scrubber of the configured secrets, whichever logger writes it.
  const logger: Logger = scrubbingLogger(
    get<Logger | undefined>('logger') ??
      createLogger({ level: logLevel, json: useJsonLogger, name: 'flags-proxy' }),
    [
      ...secretValues(PROXY_OPTIONS, values),
      ...tokens,
      ...Object.values(customClientHeaders),
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
  for (const warning of offline.warnings) logger.warn(warning);
  const nameOf = (key: string): string => sources.get(key)?.name ?? key;
  for (const line of configuredShortSecrets(get, nameOf, tokens)) logger.warn(line);
  if (
    get<string | undefined>('redisUrl') !== undefined &&
    get<string | undefined>('backupFolder') !== undefined
  )
    logger.warn(
      'Both a Redis backup and BACKUP_FOLDER are configured: the Redis backup is used, BACKUP_FOLDER is ignored',
    );
  const unsupported = unsupportedEdgeVariables(env);
  if (unsupported.length > 0) {
    logger.warn(
      `Unleash Edge variables not supported here, ignored: ${unsupported.join(', ')} (docs/unleash-edge.md says why and what to use instead)`,
    );
  }
  if (ignoredIdentities.length > 0) {
    logger.warn(
      `Several client identities towards the upstream are configured: ${identity?.kind === 'pkcs12' ? 'PKCS12_IDENTITY_FILE' : 'PKCS8_CLIENT_CERTIFICATE_FILE'} is used (Unleash Edge's order), ${ignoredIdentities.join(', ')} ignored`,
    );
  }
  // Edge's intervals are seconds; ours (which win) milliseconds. Edge's defaults (the seconds
  // options' own) hold under Edge's contract, ours under the specification's.
  const ms = (key: string, edgeSeconds: string): number => {
    const edge = !sources.has(key) && (sources.has(edgeSeconds) || contract === 'edge');
    return edge ? get<number>(edgeSeconds) * 1000 : get<number>(key);
  };
  const enableAllEndpoint =
    !get<boolean>('disableAllEndpoint') &&
    (sources.has('enableAllEndpoint') ? get<boolean>('enableAllEndpoint') : contract === 'edge');

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
    flagsUrl: offlineMode
      ? ''
      : sources.get('flagsUrl')?.name === 'UPSTREAM_URL'
        ? apiUrlOf(get('flagsUrl'))
        : get('flagsUrl'),
    flagsApiToken: tokens[0] ?? '',
    flagsApiTokens: tokens,
    clientKeys: clientKeys as string[],
    port: contract === 'edge' && !sources.has('port') ? EDGE_PORT : get('port'),
    workers: get('workers'),
    proxyBasePath: get('proxyBasePath'),
    flagsAppName: get('flagsAppName'),
    flagsInstanceId:
      get<string | undefined>('flagsInstanceId') ?? `flags-proxy-${hostname()}-${randomUUID().slice(0, 8)}`,
    refreshInterval: ms('refreshInterval', 'featuresRefreshIntervalSeconds'),
    metricsInterval: ms('metricsInterval', 'metricsIntervalSeconds'),
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
    redisUrl: offlineMode ? undefined : get('redisUrl'),
    redisKeyPrefix: get('redisKeyPrefix'),
    backupFolder: offlineMode || get('redisUrl') !== undefined ? undefined : get('backupFolder'),
    offline: offline.offline,
    enableOAS: get('enableOAS'),
    enableAllEndpoint,
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
    httpOptions: {
      rejectUnauthorized:
        get<boolean>('httpOptions.rejectUnauthorized') && !get<boolean>('skipSslVerification'),
    },
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
    tokenRevalidateInterval: ms('tokenRevalidateInterval', 'tokenRevalidationIntervalSeconds'),
    edgeValidateTokensPerSecond: get('edgeValidateTokensPerSecond'),
    contract,
    tokensName: tokensSource?.name ?? (contract === 'edge' ? 'TOKENS' : 'FLAGS_API_TOKEN'),
    keysName:
      sources.get('clientKeys')?.name ??
      (offlineMode
        ? 'FRONTEND_TOKENS'
        : contract === 'edge'
          ? 'PRETRUSTED_TOKENS'
          : 'FLAGS_PROXY_CLIENT_KEYS'),
    access: { allow: get<CidrRange[]>('allowList'), deny: get<CidrRange[]>('denyList') },
    tls,
    upstreamTls: { caFile: get('upstreamCertificateFile'), identity },
    customClientHeaders,
    upstreamRequestTimeout: timeoutSeconds === undefined ? undefined : timeoutSeconds * 1000,
    disableMetricsEndpoint: get('disableMetricsEndpoint'),
    disableMetricsBatchEndpoint: get('disableMetricsBatchEndpoint'),
    disableTokensEndpoint: get('disableTokensEndpoint'),
    disableFeaturesEndpoint: get('disableFeaturesEndpoint'),
    disableStatusEndpoint: get('disableStatusEndpoint'),
  };
}
