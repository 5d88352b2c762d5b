import type { Request } from 'express';
import type { ClientFeaturesResponse, Context, Strategy } from 'unleash-client';
import type { BootstrapOptions, StorageProvider, TagFilter } from '../upstream/sdk/types';
import type { KeyVary } from '../auth/key-vary';
import type { Logger, LogLevel } from '../../common/logging/logger';
import type { AccessLists } from '../access/address-list';
import type { Contract } from './contract';

/** A custom context enricher: receives the built context and the request, returns the context to use. */
export type ContextEnricher = (context: Context, request: Request) => Context | Promise<Context>;

export type TrustProxy = boolean | number | string[];

export interface CorsOptions {
  allowedHeaders?: string | string[];
  credentials?: boolean;
  exposedHeaders?: string | string[];
  maxAge?: number;
  methods?: string | string[];
  optionsSuccessStatus?: number;
  origin?: string | string[] | boolean | RegExp;
  preflightContinue?: boolean;
}

/** Options accepted in code by `createApp()` and `start()`; every one may also come from the environment. */
export interface ProxyOptions {
  flagsUrl?: string;
  flagsApiToken?: string;
  clientKeys?: string[] | string;
  /** @deprecated use clientKeys */
  proxySecrets?: string[] | string;
  port?: number;
  /** Worker processes of `start()`: a positive whole number or `auto`. */
  workers?: number | 'auto';
  proxyBasePath?: string;
  flagsAppName?: string;
  flagsInstanceId?: string;
  refreshInterval?: number;
  metricsInterval?: number;
  metricsJitter?: number;
  environment?: string;
  projectName?: string;
  logger?: Logger;
  useJsonLogger?: boolean;
  logLevel?: LogLevel;
  /** Paths of JavaScript files exporting strategy lists, or strategy instances. */
  customStrategies?: Array<string | Strategy> | string;
  trustProxy?: TrustProxy | string;
  namePrefix?: string;
  tags?: TagFilter[] | string;
  clientKeysHeaderName?: string;
  storageProvider?: StorageProvider<ClientFeaturesResponse>;
  redisUrl?: string;
  redisKeyPrefix?: string;
  /** Unleash Edge's `BACKUP_FOLDER`: one definitions file per upstream token. */
  backupFolder?: string;
  /** Offline mode: definitions from `bootstrapFile`, no upstream (`flags-proxy offline`). */
  offline?: boolean;
  /** Unleash Edge's contract whatever names are used (`flags-proxy edge`). */
  edgeContract?: boolean;
  bootstrapFile?: string;
  frontendTokens?: string[] | string;
  clientTokens?: string[] | string;
  /** Seconds between checks of `bootstrapFile` in offline mode; 0 reads it once. */
  reloadInterval?: number;
  enableOAS?: boolean;
  enableAllEndpoint?: boolean;
  cors?: CorsOptions;
  httpOptions?: { rejectUnauthorized?: boolean };
  httpProxy?: string;
  httpsProxy?: string;
  noProxy?: string;
  maxBodySize?: number;
  maxContextProperties?: number;
  maxContextValueLength?: number;
  maxContextSize?: number;
  prometheusCacheInterval?: number;
  maxStreams?: number;
  maxStoredDefinitionsBytes?: number;
  streamHeartbeatInterval?: number;
  expBootstrap?: BootstrapOptions;
  expServerSideSdkConfig?: { tokens?: string[] | string };
  /** Ask the upstream about unconfigured Unleash-format keys (`POST /edge/validate`). */
  upstreamTokenValidation?: boolean;
  /** ms between revalidations of accepted tokens; also how long a refusal is remembered. */
  tokenRevalidateInterval?: number;
  /** Tokens per second one address may ask about through `POST /edge/validate`. */
  edgeValidateTokensPerSecond?: number;
  /** Unleash Edge's switches of the internal backstage (`DISABLE_*_ENDPOINT`). */
  disableMetricsEndpoint?: boolean;
  disableMetricsBatchEndpoint?: boolean;
  disableTokensEndpoint?: boolean;
  disableFeaturesEndpoint?: boolean;
  /** The status page and its `status.json` under the backstage (`DISABLE_STATUS_ENDPOINT`). */
  disableStatusEndpoint?: boolean;
  /** Paths of JavaScript files exporting enricher lists, or enricher functions. */
  expCustomEnrichers?: Array<string | ContextEnricher> | string;
  /** Unleash Edge's intervals in seconds; `refreshInterval`, `metricsInterval`, `tokenRevalidateInterval` win. */
  featuresRefreshIntervalSeconds?: number;
  metricsIntervalSeconds?: number;
  tokenRevalidationIntervalSeconds?: number;
  /** Unleash Edge's switch: true turns the `/all` endpoints off whatever `enableAllEndpoint` says. */
  disableAllEndpoint?: boolean;
  /** CIDRs of the client addresses served (Edge's ALLOW_LIST); others get 403. */
  allowList?: string[] | string;
  /** CIDRs of client addresses refused with 403 (Edge's DENY_LIST). */
  denyList?: string[] | string;
  /** HTTPS beside plain HTTP (Edge's TLS_* names); files are PEM. */
  tls?: {
    enable?: boolean;
    serverCert?: string;
    serverKey?: string;
    serverPort?: number;
    redirectHttpToHttps?: boolean;
  };
  /** Edge's SKIP_SSL_VERIFICATION: true does not verify the upstream's certificate. */
  skipSslVerification?: boolean;
  /** PEM file of extra CA certificates trusted for the upstream. */
  upstreamCertificateFile?: string;
  /** The client certificate presented to the upstream (Edge's names); files are read at start. */
  clientIdentity?: {
    pkcs8CertificateFile?: string;
    pkcs8KeyFile?: string;
    pemFile?: string;
    pkcs12File?: string;
    pkcs12Passphrase?: string;
  };
  /** Headers sent with every upstream request, or Edge's `Name: value,Name2: value2`. */
  customClientHeaders?: Record<string, string> | string;
  /** Seconds each upstream request may take. */
  upstreamRequestTimeout?: number;
  /** The reference Unleash proxy's name of `flagsUrl`; `flagsUrl` wins when both are given. */
  unleashUrl?: string;
  /** The reference Unleash proxy's name of `flagsApiToken`; `flagsApiToken` wins when both are given. */
  unleashApiToken?: string;
  /** The reference Unleash proxy's name of `flagsAppName`; `flagsAppName` wins when both are given. */
  unleashAppName?: string;
  /** The reference Unleash proxy's name of `flagsInstanceId`; `flagsInstanceId` wins when both are given. */
  unleashInstanceId?: string;
}

/** Offline mode: where the definitions come from and which keys are answered. */
export interface OfflineConfig {
  readonly bootstrapFile: string;
  /** Keys of the frontend API, `/proxy` and OFREP (also in `clientKeys`). */
  readonly frontendTokens: readonly string[];
  /** Tokens of `/api/client/features`. */
  readonly clientTokens: readonly string[];
  /** 0: the file is read once. */
  readonly reloadIntervalMs: number;
}

/** The validated configuration every part of the proxy reads. */
export interface ProxyConfig {
  flagsUrl: string;
  /** The first upstream token (the only one of a single-environment proxy). */
  flagsApiToken: string;
  /** Every upstream token of `flagsApiToken`'s comma-separated list, in order. */
  flagsApiTokens: string[];
  clientKeys: string[];
  port: number;
  /** Worker processes of `start()`; 1 runs no cluster. */
  workers: number;
  /** Normalised: '' or '/base/path' (leading slash, no trailing slash). */
  proxyBasePath: string;
  flagsAppName: string;
  flagsInstanceId: string;
  refreshInterval: number;
  metricsInterval: number;
  metricsJitter: number;
  environment: string | undefined;
  projectName: string | undefined;
  logger: Logger;
  useJsonLogger: boolean;
  logLevel: LogLevel;
  customStrategies: Array<string | Strategy>;
  trustProxy: TrustProxy;
  namePrefix: string | undefined;
  tags: TagFilter[] | undefined;
  clientKeysHeaderName: string;
  /** Derived from `clientKeysHeaderName`: the `Vary` values of answers that depend on the key. */
  keyVary: KeyVary;
  storageProvider: StorageProvider<ClientFeaturesResponse> | undefined;
  redisUrl: string | undefined;
  redisKeyPrefix: string;
  backupFolder: string | undefined;
  /** Set in offline mode (Unleash Edge's): the file is the only source of definitions. */
  offline: OfflineConfig | undefined;
  enableOAS: boolean;
  enableAllEndpoint: boolean;
  cors: Required<Omit<CorsOptions, 'allowedHeaders'>> & { allowedHeaders: string[] | undefined };
  httpOptions: { rejectUnauthorized: boolean };
  httpProxy: string | undefined;
  httpsProxy: string | undefined;
  noProxy: string | undefined;
  maxBodySize: number;
  maxContextProperties: number;
  maxContextValueLength: number;
  maxContextSize: number;
  prometheusCacheInterval: number;
  maxStreams: number;
  maxStoredDefinitionsBytes: number;
  streamHeartbeatInterval: number;
  expBootstrap: BootstrapOptions | undefined;
  expServerSideSdkConfig: { tokens: string[] };
  expCustomEnrichers: Array<string | ContextEnricher>;
  upstreamTokenValidation: boolean;
  tokenRevalidateInterval: number;
  edgeValidateTokensPerSecond: number;
  /** Chosen by the names the proxy was configured by (see `contract.ts`). */
  contract: Contract;
  /** The name the upstream tokens were given under (`TOKENS`, `FLAGS_API_TOKEN`, …), for messages. */
  tokensName: string;
  /** The name the client keys were given under (`PRETRUSTED_TOKENS`, `FLAGS_PROXY_CLIENT_KEYS`, …), for messages. */
  keysName: string;
  /** ALLOW_LIST / DENY_LIST; both empty: every address is served. */
  access: AccessLists;
  /** HTTPS serving; `enable` false: plain HTTP only. */
  tls: TlsServing;
  /** TLS towards the upstream beyond `httpOptions`: extra CA and client identity (file paths). */
  upstreamTls: UpstreamTls;
  /** Headers sent with every upstream request; the upstream token's `Authorization` wins. */
  customClientHeaders: Record<string, string>;
  /** ms each upstream request may take; undefined: each request's own default. */
  upstreamRequestTimeout: number | undefined;
  disableMetricsEndpoint: boolean;
  disableMetricsBatchEndpoint: boolean;
  disableTokensEndpoint: boolean;
  disableFeaturesEndpoint: boolean;
  disableStatusEndpoint: boolean;
}

export interface TlsServing {
  enable: boolean;
  serverCert: string | undefined;
  serverKey: string | undefined;
  serverPort: number;
  redirectHttpToHttps: boolean;
}

/** The client identity presented to the upstream, in the form it was given. */
export type ClientIdentity =
  | { kind: 'pkcs12'; file: string; passphrase: string | undefined }
  | { kind: 'pkcs8'; certificateFile: string; keyFile: string }
  | { kind: 'pem'; file: string };

export interface UpstreamTls {
  caFile: string | undefined;
  identity: ClientIdentity | undefined;
}
