import cors from 'cors';
import type { RequestHandler } from 'express';
import type { ProxyConfig } from '../config/types';

/**
 * CORS for every proxy response, errors included, so a browser sees the real status. With
 * `credentials` and origin `*`, the request's origin is reflected (browsers refuse `*` with credentials).
 */
export function corsMiddleware(config: ProxyConfig['cors']): RequestHandler {
  const origin = config.origin === '*' && config.credentials ? true : config.origin;
  return cors({
    origin,
    methods: config.methods,
    allowedHeaders: config.allowedHeaders,
    exposedHeaders: config.exposedHeaders,
    credentials: config.credentials,
    maxAge: config.maxAge,
    optionsSuccessStatus: config.optionsSuccessStatus,
    preflightContinue: config.preflightContinue,
  });
}
