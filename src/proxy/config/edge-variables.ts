import { maxOf } from '../../common/config/resolve';
import { PROXY_OPTIONS } from './options';

/**
 * Every environment variable of Unleash Edge (the `unleash-edge-cli` crate's `env` arguments, edge
 * and offline modes and the global options), with what it does here. The table in docs/unleash-edge.md is
 * checked against this list by a test; a variable marked `unsupported` that
 * is set is named in one warning at start.
 */
export interface EdgeVariable {
  name: string;
  /** How it is honoured here; or why it is not (`unsupported`). */
  here: string;
  unsupported?: true;
  /**
   * Not warned about although unsupported: set by every container runtime, not by the person
   * deploying (Docker and Kubernetes set `HOSTNAME`).
   */
  ambient?: true;
}

const supported = (name: string, here: string): EdgeVariable => ({ name, here });
const unsupported = (name: string, why: string): EdgeVariable => ({ name, here: why, unsupported: true });

export const EDGE_VARIABLES: readonly EdgeVariable[] = [
  // edge mode
  supported(
    'UPSTREAM_URL',
    "alias of `FLAGS_URL` (`/api` appended when missing); with `TOKENS` it chooses Edge's contract",
  ),
  supported('TOKENS', 'alias of `FLAGS_API_TOKEN`: one environment per token'),
  supported('PRETRUSTED_TOKENS', 'alias of `FLAGS_PROXY_CLIENT_KEYS` (`token` or `secret@environment`)'),
  supported(
    'BACKUP_FOLDER',
    "writes each token's definitions to a file and starts ready from it while the upstream is down",
  ),
  supported('REDIS_URL', 'alias of `FLAGS_REDIS_URL` (one backup key per upstream token)'),
  supported(
    'CUSTOM_CLIENT_HEADERS',
    "sent with every upstream request (definitions, token validation, register, usage); the upstream token's `Authorization` wins over a custom one",
  ),
  supported(
    'UPSTREAM_CERTIFICATE_FILE',
    'a PEM file of CA certificates trusted towards the upstream beside the system ones',
  ),
  supported(
    'PKCS8_CLIENT_CERTIFICATE_FILE',
    'client certificate chain (PEM) presented to the upstream, with `PKCS8_CLIENT_KEY_FILE`',
  ),
  supported('PKCS8_CLIENT_KEY_FILE', 'the PKCS#8 PEM private key of `PKCS8_CLIENT_CERTIFICATE_FILE`'),
  supported(
    'PKCS12_IDENTITY_FILE',
    'client identity (key and chain) presented to the upstream, unlocked by `PKCS12_PASSPHRASE`; wins over the PEM forms, as in Edge',
  ),
  supported('PKCS12_PASSPHRASE', 'passphrase of `PKCS12_IDENTITY_FILE` (a secret: never logged)'),
  supported('PEM_CERT_FILE', 'one PEM file holding the client certificate chain and its private key'),
  supported(
    'UPSTREAM_REQUEST_TIMEOUT',
    'seconds every upstream request may take (definitions, validation, register, usage); unset: 10 s for definitions and usage, 5 s for validation',
  ),
  supported(
    'SKIP_SSL_VERIFICATION',
    "`true` does not verify the upstream's certificate (as `HTTP_OPTIONS_REJECT_UNAUTHORIZED=false`)",
  ),
  supported(
    'FEATURES_REFRESH_INTERVAL_SECONDS',
    "seconds between polls (15 under Edge's contract, as in Edge); `FLAGS_FETCH_INTERVAL` (ms) wins",
  ),
  supported(
    'METRICS_INTERVAL_SECONDS',
    "seconds between usage reports upstream (60 under Edge's contract); `FLAGS_METRICS_INTERVAL` (ms) wins",
  ),
  supported(
    'TOKEN_REVALIDATION_INTERVAL_SECONDS',
    'seconds between revalidations of accepted tokens (3600); `FLAGS_TOKEN_REVALIDATE_INTERVAL` (ms) wins',
  ),
  // global options
  supported(
    'RUST_LOG',
    'the log level: a level (`warn`, `info`, …) or directives (`unleash_edge=debug,actix_web=warn`: the level for `unleash_edge`, else the plain one); `LOG_LEVEL` wins',
  ),
  supported(
    'LOG_FORMAT',
    '`json`: one JSON object per line; `plain` and `pretty`: human-readable lines; `JSON_LOGGER` wins',
  ),
  supported('PORT', "the HTTP port: 3063 under Edge's contract, 3000 under the specification's"),
  supported(
    'BASE_PATH',
    'alias of `PROXY_BASE_PATH`: prefixes every path (`/api/...`, `/internal-backstage/...`, `/edge/...`, `/proxy`)',
  ),
  supported('TLS_ENABLE', 'serves HTTPS on `TLS_SERVER_PORT` beside plain HTTP on `PORT`'),
  supported('TLS_SERVER_CERT', 'PEM certificate chain of the HTTPS listener'),
  supported('TLS_SERVER_KEY', 'PEM private key of the HTTPS listener'),
  supported('TLS_SERVER_PORT', 'the HTTPS port (default 3043)'),
  supported(
    'REDIRECT_HTTP_TO_HTTPS',
    '`PORT` answers every request with a 308 to the same path on `TLS_SERVER_PORT`',
  ),
  supported('CORS_ORIGIN', 'the same name'),
  supported('CORS_ALLOWED_HEADERS', 'the same name'),
  supported('CORS_MAX_AGE', 'the same name'),
  supported('CORS_EXPOSED_HEADERS', 'the same name'),
  supported('CORS_METHODS', 'the same name'),
  supported(
    'ALLOW_LIST',
    'CIDRs (IPv4 and IPv6) of the client addresses served; others get 403 before anything else',
  ),
  supported('DENY_LIST', 'CIDRs of client addresses refused with 403 before anything else'),
  supported('APP_NAME', 'alias of `FLAGS_APP_NAME`'),
  supported('INSTANCE_ID', 'alias of `FLAGS_INSTANCE_ID`'),
  supported(
    'TRUST_PROXY',
    'the same name: `true` trusts every hop, or give the trusted addresses/CIDRs in `TRUST_PROXY` itself',
  ),
  supported(
    'DISABLE_ALL_ENDPOINT',
    "`true` turns `/all` off (501); under Edge's contract `/all` is on by default",
  ),
  supported('TOKEN_HEADER', 'alias of `CLIENT_KEY_HEADER_NAME`: the header carrying client keys'),
  supported('DISABLE_METRICS_BATCH_ENDPOINT', 'turns `/internal-backstage/metricsbatch` off'),
  supported('DISABLE_METRICS_ENDPOINT', 'turns `/internal-backstage/metrics` off'),
  supported(
    'DISABLE_FEATURES_ENDPOINT',
    'turns `/internal-backstage/features` off (served only to a client token here)',
  ),
  supported('DISABLE_TOKENS_ENDPOINT', 'turns `/internal-backstage/tokens` off'),
  // offline mode
  supported(
    'BOOTSTRAP_FILE',
    "offline mode when no upstream URL is given: definitions from the file (client API or Edge's simple format)",
  ),
  supported('CLIENT_TOKENS', 'offline mode: the tokens `/api/client/features` accepts'),
  supported('FRONTEND_TOKENS', 'offline mode: the keys the frontend API, OFREP and `/proxy` accept'),
  supported('RELOAD_INTERVAL', 'offline mode: seconds between reads of `BOOTSTRAP_FILE` (0: never)'),
  // health and ready
  supported(
    'EDGE_URL',
    '`flags-proxy health` / `ready`: the instance asked (default `http://localhost:3063`, or `PORT` and `BASE_PATH` when set)',
  ),
  supported(
    'CA_CERTIFICATE_FILE',
    '`flags-proxy health` / `ready`: PEM CA certificates trusted for an `https://` `EDGE_URL`',
  ),
  // not supported
  unsupported(
    'UPSTREAM_SOCKET_TIMEOUT',
    'one timeout covers each upstream request: `UPSTREAM_REQUEST_TIMEOUT`',
  ),
  unsupported(
    'CLIENT_KEEPALIVE_TIMEOUT',
    "upstream connections are kept alive by Node's agent (30 s keep-alive probes)",
  ),
  unsupported(
    'INTERFACE',
    "the proxy listens on every interface; bind one with the container's port mapping",
  ),
  unsupported('WORKERS', 'no effect in Edge since 20.0.0; here `FLAGS_WORKERS` runs worker processes'),
  unsupported('PROXY_TRUSTED_SERVERS', "give the trusted addresses/CIDRs as `TRUST_PROXY`'s value"),
  unsupported(
    'EDGE_REQUEST_TIMEOUT',
    'no per-request deadline towards clients; bodies and contexts are bounded instead',
  ),
  unsupported('EDGE_KEEPALIVE_TIMEOUT', "Node's HTTP server keep-alive defaults apply"),
  unsupported('EDGE_AUTH_HEADER', 'use `TOKEN_HEADER` or `CLIENT_KEY_HEADER_NAME`'),
  unsupported('UPSTREAM_AUTH_HEADER', 'the upstream token is always sent in `Authorization`'),
  unsupported('DISABLE_INSTANCE_DATA_ENDPOINT', 'there is no `/internal-backstage/instancedata` to turn off'),
  unsupported('REDIS_MODE', 'one Redis node (`FLAGS_REDIS_URL`); no cluster mode'),
  unsupported('REDIS_PASSWORD', 'put the credentials in `REDIS_URL`'),
  unsupported('REDIS_USERNAME', 'put the credentials in `REDIS_URL`'),
  unsupported('REDIS_PORT', 'give the whole `REDIS_URL`'),
  unsupported('REDIS_HOST', 'give the whole `REDIS_URL`'),
  unsupported('REDIS_SECURE', 'use a `rediss://` `REDIS_URL`'),
  unsupported('REDIS_SCHEME', 'the scheme of `REDIS_URL`'),
  unsupported('REDIS_READ_CONNECTION_TIMEOUT_MILLISECONDS', "the Redis backup's own bounded timeouts apply"),
  unsupported('REDIS_WRITE_CONNECTION_TIMEOUT_MILLISECONDS', "the Redis backup's own bounded timeouts apply"),
  unsupported('S3_BUCKET_NAME', 'no S3 backup: use `BACKUP_FOLDER` or `REDIS_URL`'),
  unsupported('S3_FORCE_PATH_STYLE', 'no S3 backup'),
  unsupported(
    'STREAMING',
    'the upstream is polled (with ETags); streaming from the upstream is not implemented',
  ),
  unsupported('DELTA', 'the upstream is polled for full definitions; delta polling is not implemented'),
  unsupported('CONSUMPTION', "Edge's hidden consumption metrics are not reported"),
  unsupported('PROMETHEUS_REMOTE_WRITE_URL', 'scrape `/internal-backstage/metrics` instead; no remote write'),
  unsupported('PROMETHEUS_PUSH_INTERVAL', 'no remote write'),
  unsupported('PROMETHEUS_USERNAME', 'no remote write'),
  unsupported('PROMETHEUS_PASSWORD', 'no remote write'),
  unsupported('PROMETHEUS_USER_ID', 'no remote write'),
  unsupported('SENTRY_DSN', 'no Sentry integration'),
  unsupported('SENTRY_TRACING_RATE', 'no Sentry integration'),
  unsupported('SENTRY_DEBUG', 'no Sentry integration'),
  unsupported('SENTRY_ENABLE_LOGS', 'no Sentry integration'),
  unsupported('DATADOG_URL', 'no Datadog integration; scrape the Prometheus metrics'),
  unsupported('OTEL_EXPORTER_OTLP_ENDPOINT', 'no OpenTelemetry export'),
  unsupported('OTEL_EXPORTER_OTLP_PROTOCOL', 'no OpenTelemetry export'),
  unsupported('CLIENT_ID', "Edge's hidden Prometheus label; not used"),
  unsupported('EDGE_HOSTING', "Edge's hidden hosting type; not used"),
  unsupported('EC2_INSTANCE_ID', "Edge's hidden instance label; not used"),
  unsupported('UNLEASH_CLIENT_SECRET', "Edge's hidden HMAC token issuing (Enterprise); give `TOKENS`"),
  unsupported('DESIRED_ENVIRONMENTS', "Edge's hidden HMAC token issuing (Enterprise); give `TOKENS`"),
  unsupported('DESIRED_PROJECTS', "Edge's hidden HMAC token issuing (Enterprise); give `TOKENS`"),
  {
    ...unsupported(
      'HOSTNAME',
      "Edge's hidden instance label; set by every container runtime, so not warned about",
    ),
    ambient: true,
  },
];

/** The unsupported Edge variables set in `env` (empty values count as unset), in table order. */
export function unsupportedEdgeVariables(env: Record<string, string | undefined>): string[] {
  return EDGE_VARIABLES.filter(
    (v) => v.unsupported && !v.ambient && env[v.name] !== undefined && env[v.name] !== '',
  ).map((v) => v.name);
}

/** `; at most 86400 s (1 day)` after a variable whose option has a maximum; nothing otherwise. */
function boundOf(name: string): string {
  const spec = PROXY_OPTIONS.find((o) => o.env.includes(name) && o.max !== undefined);
  return spec === undefined ? '' : `; at most ${maxOf(spec)}`;
}

/** docs/unleash-edge.md's table of every Edge variable (between the edge-variables markers; `npm run docs`). */
export function edgeVariablesMarkdownTable(): string {
  const rows = EDGE_VARIABLES.map(
    (v) =>
      `| \`${v.name}\` | ${v.unsupported ? 'no (warned about at start)' : 'yes'} | ${v.here}${boundOf(v.name)} |`,
  );
  return ['| Unleash Edge variable | Supported | Here |', '|---|---|---|', ...rows].join('\n');
}
