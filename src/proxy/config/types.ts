import type { Request } from 'express';
import type { ClientFeaturesResponse, Context, Strategy } from 'unleash-client';
import type { BootstrapOptions, StorageProvider, TagFilter } from '../upstream/sdk/types';
import type { KeyVary } from '../auth/key-vary';
import type { Logger, LogLevel } from '../../common/logging/logger';

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
  /** Unleash Edge's switches of the internal backstage (`DISABLE_*_ENDPOINT`). */
  disableMetricsEndpoint?: boolean;
  disableMetricsBatchEndpoint?: boolean;
  disableTokensEndpoint?: boolean;
  disableFeaturesEndpoint?: boolean;
  /** Paths of JavaScript files exporting enricher lists, or enricher functions. */
  expCustomEnrichers?: Array<string | ContextEnricher> | string;
  /** The reference Unleash proxy's name of `flagsUrl`; `flagsUrl` wins when both are given. */
  unleashUrl?: string;
  /** The reference Unleash proxy's name of `flagsApiToken`; `flagsApiToken` wins when both are given. */
  unleashApiToken?: string;
  /** The reference Unleash proxy's name of `flagsAppName`; `flagsAppName` wins when both are given. */
  unleashAppName?: string;
  /** The reference Unleash proxy's name of `flagsInstanceId`; `flagsInstanceId` wins when both are given. */
  unleashInstanceId?: string;
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
  disableMetricsEndpoint: boolean;
  disableMetricsBatchEndpoint: boolean;
  disableTokensEndpoint: boolean;
  disableFeaturesEndpoint: boolean;
}
