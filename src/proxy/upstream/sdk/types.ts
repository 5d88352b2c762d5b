/**
 * The types the proxy uses from `unleash-client`'s modules below its public entry
 * (`unleash-client/lib/...`), re-exported from here: the rest of the code imports them from this
 * module, never from the SDK's files, so an upgrade that moves or renames them fails to compile
 * in this folder only. Types of the public entry (`from 'unleash-client'`) are imported directly.
 */
export type { ApiResponse, ClientFeaturesResponse, FeatureInterface } from 'unleash-client/lib/feature';
export type { HttpOptions } from 'unleash-client/lib/http-options';
export type { RepositoryOptions } from 'unleash-client/lib/repository';
export type { BootstrapOptions, BootstrapProvider } from 'unleash-client/lib/repository/bootstrap-provider';
export type { StorageProvider } from 'unleash-client/lib/repository/storage-provider';
export type { StrategyTransportInterface } from 'unleash-client/lib/strategy';
export type { Constraint, Segment } from 'unleash-client/lib/strategy/strategy';
export type { TagFilter } from 'unleash-client/lib/tags';
