import { Router, type ErrorRequestHandler, type Request, type Response } from 'express';
import type { Context } from 'unleash-client';
import {
  AuthenticationRequired,
  NoAccessError,
  NotFoundError,
  NotReady,
  ValidationError,
} from '../../common/errors/http-errors';
import { jsonBody } from '../../common/http/json-body';
import { addVary } from '../../common/http/vary';
import type { EvaluationInput, EvaluationPipeline } from '../evaluation/pipeline';
import type { BodyBuffers } from '../engine/body-buffers';
import { evaluateWithDetails } from '../engine/details';
import { requireReady } from '../readiness/require-ready';
import type { FeatureRepository } from '../upstream/feature-repository';
import { requireOfrepKey, requireStreamAccess, StreamKeys, streamToken, type OfrepAuthOptions } from './auth';
import { OfrepBulk, originOf, STREAM_PATH, type OfrepScope } from './bulk-answer';
import type { ChangeStreams } from './event-stream';
import { flagNotFound, toOfrepResult, type OfrepResult } from './mapping';
import { OfrepError, ofrepInput } from './request-input';

export { INACTIVITY_DELAY_SEC, STREAM_PATH, type OfrepScope } from './bulk-answer';

export interface OfrepRouterOptions {
  features: FeatureRepository;
  /** The evaluation pipeline of `/proxy`: its context step (environment, address, enrichers). */
  pipeline: EvaluationPipeline;
  maxBodySize: number;
  auth: OfrepAuthOptions;
  streams: ChangeStreams;
  /** Readiness of the whole proxy (else `features`'). */
  ready?: Pick<FeatureRepository, 'isReady'>;
  /** What serves the request's key scope, when the proxy serves several (else the options above). */
  scopeOf?: (res: Response) => OfrepScope;
  /** The `Vary` of every evaluation answer (`KeyVary.ofrep`): each header the key may travel in. */
  vary: string;
  /** Memory for bulk answers written once: the app's (else one of its own). */
  bodies?: BodyBuffers;
}

function sendJson(res: Response, status: number, body: unknown): void {
  res.status(status).type('application/json; charset=utf-8').send(JSON.stringify(body));
}

/**
 * `POST {prefix}/ofrep/v1/evaluate/flags/{key}`, `POST {prefix}/ofrep/v1/evaluate/flags` and the
 * change stream `GET {prefix}/ofrep/v1/flag-changes`, mounted under `{prefix}/ofrep`.
 */
export function ofrepRouter(opts: OfrepRouterOptions): Router {
  return ofrepEndpoints(opts).router;
}

/**
 * `ofrepRouter` and its bulk pipeline (`bulk-answer.ts`), which the raw entry of the bulk path
 * (`bulk-lane.ts`) calls too: one pipeline, one memory pool and one set of stream tokens.
 */
export function ofrepEndpoints(opts: OfrepRouterOptions): { router: Router; bulk: OfrepBulk } {
  const router = Router();
  const requireKey = requireOfrepKey(opts.auth);
  const streamKeys = new StreamKeys();
  const scopeOf = (res: Response): OfrepScope => opts.scopeOf?.(res) ?? opts;
  const tokenOf = (key: string): string =>
    opts.auth.resolveKey && !opts.auth.clientKeys.includes(key) ? streamKeys.remember(key) : streamToken(key);
  const bulk = new OfrepBulk(opts.pipeline.contextLimits, tokenOf, opts.vary, opts.bodies);

  // the full context: the body's (checked by `ofrepInput`) through the scope's context step
  const contextOf = (input: EvaluationInput, req: Request, res: Response): Promise<Context> =>
    scopeOf(res).pipeline.context(input, req);

  router.use(requireReady(opts.ready ?? opts.features));
  // Before the routes: the key is checked ahead of the path's flag key (a bad escape there is a 400).
  router.use('/v1/evaluate/flags', requireKey);

  router.post('/v1/evaluate/flags/:key', ...jsonBody(opts.maxBodySize), async (req, res) => {
    const key = String(req.params.key);
    const context = await contextOf(ofrepInput(req.body, opts.pipeline.contextLimits, key), req, res);
    const details = evaluateWithDetails(scopeOf(res).features, key, context);
    const result: OfrepResult = details ? toOfrepResult(details) : flagNotFound(key);
    const status = 'errorCode' in result ? (result.errorCode === 'FLAG_NOT_FOUND' ? 404 : 500) : 200;
    res.setHeader('Cache-Control', 'no-store');
    addVary(res, opts.vary);
    sendJson(res, status, result);
  });

  router.post('/v1/evaluate/flags', ...jsonBody(opts.maxBodySize), async (req, res) => {
    const context = await contextOf(bulk.input(req.body), req, res);
    bulk.write(req, res, {
      scope: scopeOf(res),
      context,
      key: String(res.locals.clientKey),
      origin: originOf(req.protocol, req.host),
      basePath: req.baseUrl,
    });
  });

  router.get(STREAM_PATH, requireStreamAccess(opts.auth, streamKeys), (req, res) => {
    const lastEventId = req.headers['last-event-id'];
    const since = typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : req.query.since;
    scopeOf(res).streams.accept(res, typeof since === 'string' ? since : undefined);
  });

  router.use((req, _res, next) => {
    next(new NotFoundError(`No endpoint ${req.method} ${req.baseUrl}${req.path}`));
  });
  router.use(ofrepErrors);
  return { router, bulk };
}

/** The flag key of a single-flag evaluation path (route parameters are gone when errors get here). */
function flagKeyOfPath(path: string): string | undefined {
  const match = /^\/v1\/evaluate\/flags\/([^/]+)$/.exec(path);
  if (!match) return undefined;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return match[1];
  }
}

/** OFREP's own answers: 401/403 without a body, 400/404/500 in its error shape; the rest as everywhere. */
export const ofrepErrors: ErrorRequestHandler = (err: unknown, req, res, next) => {
  if (res.headersSent) {
    next(err);
    return;
  }
  // a key whose environment is not served (its token refused, or not synchronised yet)
  if (err instanceof NotReady && !res.hasHeader('Retry-After')) res.setHeader('Retry-After', '1');
  if (err instanceof AuthenticationRequired || err instanceof NoAccessError) {
    res.status(err.status).end();
    return;
  }
  if (err instanceof OfrepError) {
    sendJson(res, err.status, err.body);
    return;
  }
  if (err instanceof ValidationError) {
    const key = flagKeyOfPath(req.path);
    sendJson(res, 400, {
      ...(key === undefined ? {} : { key }),
      errorCode: 'PARSE_ERROR',
      errorDetails: err.message,
    });
    return;
  }
  if (err instanceof URIError) {
    sendJson(res, 400, {
      errorCode: 'PARSE_ERROR',
      errorDetails: 'The flag key in the path is not valid percent-encoding (a "%" must start "%XX")',
    });
    return;
  }
  const parseFailed = (err as { type?: unknown } | null)?.type === 'entity.parse.failed';
  if (parseFailed) {
    const key = flagKeyOfPath(req.path);
    sendJson(res, 400, {
      ...(key === undefined ? {} : { key }),
      errorCode: 'PARSE_ERROR',
      errorDetails: `Request body is not valid JSON: ${(err as Error).message}`,
    });
    return;
  }
  next(err);
};
