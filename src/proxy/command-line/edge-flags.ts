/**
 * Unleash Edge's command-line flags (the `unleash-edge-cli` crate's clap arguments), by where they
 * may be given. Each flag is named after the variable it is also read from (`--upstream-url` is
 * `UPSTREAM_URL`); a flag given sets that variable for this run, winning over the environment.
 * Whether and how each variable is honoured here is `config/edge-variables.ts`' business: a flag of
 * an unsupported variable is accepted and warned about at start like the variable itself.
 */

/** How a flag takes its value: one value, a comma-separated list (repeats add up), or none (`true`). */
export type FlagKind = 'value' | 'list' | 'switch';

export interface EdgeFlag {
  /** `upstream-url` for `--upstream-url`. */
  readonly long: string;
  readonly short?: string;
  /** The variable it sets: `UPSTREAM_URL`. */
  readonly variable: string;
  readonly kind: FlagKind;
  /** Given after the subcommand too (clap's `global`); the others go before it. */
  readonly global: boolean;
  /** Shown by `--help` with this text (the argument's placeholder, then what it is). */
  readonly help?: readonly [placeholder: string, text: string];
}

type Options = { short?: string; global?: boolean; help?: readonly [string, string] };

function flag(long: string, kind: FlagKind, options: Options = {}): EdgeFlag {
  return {
    long,
    short: options.short,
    variable: long.toUpperCase().replace(/-/g, '_'),
    kind,
    global: options.global ?? false,
    help: options.help,
  };
}
const value = (long: string, options?: Options) => flag(long, 'value', options);
const list = (long: string, options?: Options) => flag(long, 'list', options);
const on = (long: string, options?: Options) => flag(long, 'switch', options);
const G = { global: true };

/** Before the subcommand (`unleash-edge --port 4000 edge …`), or after it when global. */
export const TOP_FLAGS: readonly EdgeFlag[] = [
  value('port', { short: 'p', help: ['<port>', 'HTTP port (3063)'] }),
  value('interface', { short: 'i' }),
  value('base-path', { ...G, help: ['<path>', 'prefix of every path'] }),
  on('tls-enable', { help: ['', 'serve HTTPS on --tls-server-port beside HTTP'] }),
  value('tls-server-key'),
  value('tls-server-cert'),
  value('tls-server-port'),
  on('redirect-http-to-https'),
  list('cors-origin', G),
  list('cors-allowed-headers', G),
  value('cors-max-age', G),
  list('cors-exposed-headers', G),
  list('cors-methods', G),
  list('allow-list', G),
  list('deny-list', G),
  value('workers', { short: 'w', ...G }),
  value('instance-id', G),
  value('client-id', G),
  value('app-name', { short: 'a', ...G }),
  on('trust-proxy', G),
  list('proxy-trusted-servers', G),
  on('disable-all-endpoint', { ...G, help: ['', 'turn /api/frontend/all and /api/proxy/all off'] }),
  value('edge-request-timeout'),
  value('edge-keepalive-timeout'),
  value('log-format', { short: 'l', ...G, help: ['<plain|pretty|json>', 'log lines (plain)'] }),
  value('edge-auth-header', G),
  value('upstream-auth-header', G),
  value('token-header', G),
  on('disable-metrics-batch-endpoint', G),
  on('disable-metrics-endpoint', G),
  on('disable-features-endpoint', G),
  on('disable-tokens-endpoint', G),
  on('disable-instance-data-endpoint', G),
  value('sentry-dsn', G),
  value('sentry-tracing-rate', G),
  on('sentry-debug', G),
  on('sentry-enable-logs', G),
  value('datadog-url', G),
  value('otel-exporter-otlp-endpoint', G),
  value('otel-exporter-otlp-protocol', G),
];

/** `edge`'s own flags. */
const EDGE: readonly EdgeFlag[] = [
  value('upstream-url', { short: 'u', help: ['<url>', 'the Unleash server, without /api'] }),
  list('tokens', { short: 't', help: ['<t,…>', 'client tokens, `<project>:<environment>.<secret>`'] }),
  list('pretrusted-tokens', { short: 'p', help: ['<t,…>', 'frontend tokens trusted without asking'] }),
  value('backup-folder', { short: 'b', help: ['<dir>', 'definitions kept there across restarts'] }),
  value('metrics-interval-seconds', { short: 'm', help: ['<s>', 'usage reports upstream (60)'] }),
  value('features-refresh-interval-seconds', { short: 'f', help: ['<s>', 'polls of the upstream (15)'] }),
  value('token-revalidation-interval-seconds', { help: ['<s>', 'revalidation of tokens (3600)'] }),
  list('custom-client-headers', { short: 'H' }),
  on('skip-ssl-verification', { short: 's' }),
  value('pkcs8-client-certificate-file'),
  value('pkcs8-client-key-file'),
  value('pkcs12-identity-file'),
  value('pkcs12-passphrase'),
  value('pem-cert-file'),
  value('upstream-certificate-file'),
  value('upstream-request-timeout'),
  value('upstream-socket-timeout'),
  list('redis-url', { help: ['<url>', 'definitions kept in Redis across restarts'] }),
  value('redis-mode'),
  value('redis-password'),
  value('redis-username'),
  value('redis-port'),
  value('redis-host'),
  on('redis-secure'),
  value('redis-scheme'),
  value('redis-read-connection-timeout-milliseconds'),
  value('redis-write-connection-timeout-milliseconds'),
  value('s3-bucket-name'),
  on('s3-force-path-style'),
  on('streaming'),
  on('delta'),
  on('consumption'),
  value('client-keepalive-timeout'),
  value('prometheus-remote-write-url'),
  value('prometheus-push-interval'),
  value('prometheus-username'),
  value('prometheus-password'),
  value('prometheus-user-id'),
  value('hostname'),
  value('ec2-instance-id'),
  value('unleash-client-secret'),
  list('desired-environments'),
  list('desired-projects'),
];

/** `offline`'s flags. */
const OFFLINE: readonly EdgeFlag[] = [
  value('bootstrap-file', { short: 'b', help: ['<file>', 'the definitions served'] }),
  list('client-tokens', { short: 'c', help: ['<t,…>', 'tokens of /api/client/features'] }),
  list('frontend-tokens', { short: 'f', help: ['<t,…>', 'keys of the frontend API, /proxy, OFREP'] }),
  value('reload-interval', { short: 'r', help: ['<s>', 'seconds between reads of the file (0: once)'] }),
];

/** `health`'s and `ready`'s flags. */
const CHECK: readonly EdgeFlag[] = [
  value('edge-url', { short: 'e', help: ['<url>', 'the instance asked (http://localhost:3063)'] }),
  value('ca-certificate-file', { short: 'c', help: ['<file>', 'PEM CA of an https:// --edge-url'] }),
];

export type Subcommand = 'edge' | 'offline' | 'health' | 'ready';

export const SUBCOMMAND_FLAGS: Readonly<Record<Subcommand, readonly EdgeFlag[]>> = {
  edge: EDGE,
  offline: OFFLINE,
  health: CHECK,
  ready: CHECK,
};

export const SUBCOMMANDS = Object.keys(SUBCOMMAND_FLAGS) as Subcommand[];

export function isSubcommand(word: string): word is Subcommand {
  return Object.hasOwn(SUBCOMMAND_FLAGS, word);
}
