export { createApp, type ProxyApp } from './proxy/app';
export { start, type RunningProxy, type RunningPrimary } from './proxy/start';
export { parseConfig } from './proxy/config/parse-config';
export type { ProxyOptions, ProxyConfig, ContextEnricher, CorsOptions } from './proxy/config/types';
export type { Logger, LogLevel } from './common/logging/logger';
export { ConfigError } from './common/config/resolve';
export { Strategy } from 'unleash-client';
