import type { Strategy } from 'unleash-client';
import * as p from '../../common/config/parsers';
import { loggingOptions, passThrough } from '../../common/config/logging-options';
import type { OptionSpec } from '../../common/config/resolve';
import { basePath, corsOrigin, headerName, pluginList, tags, trustProxy } from './proxy-parsers';
import type { ContextEnricher } from './types';

const isStrategy = (v: unknown): v is Strategy =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as Strategy).name === 'string' &&
  typeof (v as Strategy).isEnabled === 'function';
const isEnricher = (v: unknown): v is ContextEnricher => typeof v === 'function';

/**
 * Every option of the proxy, declared once. The README table and `.env.example` are checked
 * against this list by a test.
 */
export const PROXY_OPTIONS: readonly OptionSpec[] = [
  {
    key: 'flagsUrl',
    env: ['FLAGS_URL'],
    parse: p.httpUrl,
    required: true,
    doc: 'API URL of the upstream flag server, e.g. http://localhost:4242/api',
  },
  {
    key: 'flagsApiToken',
    env: ['FLAGS_API_TOKEN'],
    parse: p.string,
    required: true,
    secret: true,
    doc: 'Client API token the proxy uses to authenticate to the upstream',
  },
  {
    key: 'clientKeys',
    env: ['FLAGS_PROXY_CLIENT_KEYS'],
    parse: p.nonEmptyList,
    required: true,
    secret: true,
    doc: 'Comma-separated client keys the proxy accepts from frontend SDKs',
  },
  {
    key: 'proxySecrets',
    env: ['FLAGS_PROXY_SECRETS'],
    parse: p.nonEmptyList,
    secret: true,
    doc: 'Deprecated alias of clientKeys (logs a warning); used only when clientKeys is unset',
  },
  {
    key: 'port',
    env: ['PORT', 'PROXY_PORT'],
    parse: p.port,
    default: 3000,
    doc: 'Port `start()` / `npm start` listens on',
  },
  {
    key: 'proxyBasePath',
    env: ['PROXY_BASE_PATH'],
    parse: basePath,
    default: '',
    defaultDoc: '(empty)',
    doc: 'Path prefix; `/proxy` is appended (`base/path` gives `/base/path/proxy`)',
  },
  {
    key: 'flagsAppName',
    env: ['FLAGS_APP_NAME'],
    parse: p.string,
    default: 'flags-proxy',
    doc: 'App name used to register with the upstream',
  },
  {
    key: 'flagsInstanceId',
    env: ['FLAGS_INSTANCE_ID'],
    parse: p.string,
    defaultDoc: '(generated)',
    doc: 'Instance id used to register with the upstream',
  },
  {
    key: 'refreshInterval',
    env: ['FLAGS_FETCH_INTERVAL'],
    parse: p.wholeNumber,
    default: 5000,
    doc: 'Milliseconds between polls of the upstream',
  },
  {
    key: 'metricsInterval',
    env: ['FLAGS_METRICS_INTERVAL'],
    parse: p.wholeNumber,
    default: 30000,
    doc: 'Milliseconds between usage-metric reports to the upstream',
  },
  {
    key: 'metricsJitter',
    env: ['FLAGS_METRICS_JITTER'],
    parse: p.wholeNumber,
    default: 0,
    doc: 'Milliseconds of random jitter added to the metrics interval',
  },
  {
    key: 'environment',
    env: ['FLAGS_ENVIRONMENT'],
    parse: p.string,
    doc: 'Fixed context environment; clients cannot override it',
  },
  {
    key: 'projectName',
    env: ['FLAGS_PROJECT_NAME'],
    parse: p.string,
    doc: 'Project id; only toggles of that project are known',
  },
  ...loggingOptions('warn'),
  {
    key: 'customStrategies',
    env: ['FLAGS_CUSTOM_STRATEGIES_FILE'],
    parse: pluginList(isStrategy, 'strategy instances'),
    default: [],
    defaultDoc: '(none)',
    doc: 'Comma-separated JavaScript files, each exporting a list of custom strategy instances',
  },
  {
    key: 'trustProxy',
    env: ['TRUST_PROXY'],
    parse: trustProxy,
    default: false,
    doc: 'true/false, a hop count, or comma-separated IP/CIDR entries; when trusted, X-Forwarded-* headers fill the context ip',
  },
  {
    key: 'namePrefix',
    env: ['FLAGS_NAME_PREFIX'],
    parse: p.string,
    doc: 'Only features whose name has this prefix are requested',
  },
  {
    key: 'tags',
    env: ['FLAGS_TAGS'],
    parse: tags,
    doc: 'Tag filter, format tagName:tagValue,tagName2:tagValue2',
  },
  {
    key: 'clientKeysHeaderName',
    env: ['CLIENT_KEY_HEADER_NAME'],
    parse: headerName,
    default: 'authorization',
    doc: 'Header carrying the client key',
  },
  {
    key: 'storageProvider',
    env: [],
    parse: passThrough,
    codeOnly: true,
    doc: "Custom storage provider (the SDK's StorageProvider interface; code only)",
  },
  {
    key: 'enableOAS',
    env: ['ENABLE_OAS'],
    parse: p.boolean,
    default: false,
    doc: 'Serve the OpenAPI JSON and UI under {prefix}/docs',
  },
  {
    key: 'enableAllEndpoint',
    env: ['ENABLE_ALL_ENDPOINT'],
    parse: p.boolean,
    default: false,
    doc: 'Expose `/proxy/all` (enabled and disabled toggles)',
  },
  {
    key: 'cors.allowedHeaders',
    env: ['CORS_ALLOWED_HEADERS'],
    parse: p.list,
    defaultDoc: '(reflects the request)',
    doc: 'Headers allowed in CORS requests',
  },
  {
    key: 'cors.credentials',
    env: ['CORS_CREDENTIALS'],
    parse: p.boolean,
    default: false,
    doc: 'Allow credentials in CORS requests',
  },
  {
    key: 'cors.exposedHeaders',
    env: ['CORS_EXPOSED_HEADERS'],
    parse: p.list,
    default: ['ETag'],
    doc: 'Headers exposed to the browser',
  },
  {
    key: 'cors.maxAge',
    env: ['CORS_MAX_AGE'],
    parse: p.wholeNumber,
    default: 172800,
    doc: 'Seconds a preflight result may be cached',
  },
  {
    key: 'cors.methods',
    env: ['CORS_METHODS'],
    parse: p.nonEmptyList,
    default: ['GET', 'POST'],
    doc: 'Allowed methods',
  },
  {
    key: 'cors.optionsSuccessStatus',
    env: ['CORS_OPTIONS_SUCCESS_STATUS'],
    parse: p.wholeNumber,
    default: 204,
    doc: 'Status of a successful preflight',
  },
  {
    key: 'cors.origin',
    env: ['CORS_ORIGIN'],
    parse: corsOrigin,
    default: '*',
    doc: 'Allowed origin: *, one origin, or a comma-separated list',
  },
  {
    key: 'cors.preflightContinue',
    env: ['CORS_PREFLIGHT_CONTINUE'],
    parse: p.boolean,
    default: false,
    doc: 'Pass the preflight on to later handlers',
  },
  {
    key: 'httpOptions.rejectUnauthorized',
    env: ['HTTP_OPTIONS_REJECT_UNAUTHORIZED'],
    parse: p.boolean,
    default: true,
    doc: 'Reject upstream TLS certificates that do not verify',
  },
  {
    key: 'httpProxy',
    env: ['HTTP_PROXY', 'http_proxy'],
    parse: p.httpUrl,
    doc: 'Proxy server for requests to an http:// upstream',
  },
  {
    key: 'httpsProxy',
    env: ['HTTPS_PROXY', 'https_proxy'],
    parse: p.httpUrl,
    doc: 'Proxy server for requests to an https:// upstream',
  },
  {
    key: 'noProxy',
    env: ['NO_PROXY', 'no_proxy'],
    parse: p.string,
    doc: 'Comma-separated hosts reached without the proxy server',
  },
  {
    key: 'maxBodySize',
    env: ['FLAGS_PROXY_MAX_BODY_SIZE'],
    parse: p.wholeNumber,
    default: 102400,
    doc: 'Largest accepted request body in bytes; larger ones get 413',
  },
  {
    key: 'maxStreams',
    env: ['FLAGS_MAX_STREAMS'],
    parse: p.wholeNumber,
    default: 10000,
    doc: 'Most OFREP change-notification streams (SSE) open at once; more get 503',
  },
  {
    key: 'streamHeartbeatInterval',
    env: ['FLAGS_STREAM_HEARTBEAT_INTERVAL'],
    parse: p.wholeNumber,
    default: 15000,
    doc: 'ms between comment heartbeats on OFREP change-notification streams',
  },
  {
    key: 'expBootstrap.url',
    env: ['EXP_BOOTSTRAP_URL'],
    parse: p.httpUrl,
    doc: 'Experimental: URL to bootstrap flag definitions from',
  },
  {
    key: 'expBootstrap.urlHeaders.Authorization',
    env: ['EXP_BOOTSTRAP_AUTHORIZATION'],
    parse: p.string,
    secret: true,
    doc: 'Experimental: Authorization header sent to the bootstrap URL',
  },
  {
    key: 'expServerSideSdkConfig.tokens',
    env: ['EXP_SERVER_SIDE_SDK_CONFIG_TOKENS'],
    parse: p.list,
    default: [],
    defaultDoc: '(none)',
    secret: true,
    doc: 'Experimental: tokens server SDKs and other proxies use to read configuration from this proxy',
  },
  {
    key: 'expCustomEnrichers',
    env: ['EXP_CUSTOM_ENRICHERS_FILE'],
    parse: pluginList(isEnricher, 'enricher functions'),
    default: [],
    defaultDoc: '(none)',
    doc: 'Experimental: comma-separated JavaScript files, each exporting a list of context enrichers',
  },
];
