import { Router, type ErrorRequestHandler, type Response } from 'express';
import { NotFoundError } from '../../common/errors/http-errors';
import type { BodyBuffers } from '../engine/body-buffers';
import type { EvaluationPipeline } from '../evaluation/pipeline';
import { requireReady } from '../readiness/require-ready';
import type { FeatureRepository } from '../upstream/feature-repository';
import { requireOfrepKey, requireStreamAccess, StreamKeys, streamToken, type OfrepAccess } from './auth';
import { OfrepBulk, STREAM_PATH, type OfrepScope } from './bulk-answer';
import { ofrepErrorAnswer } from './errors';
import type { ChangeStreams } from './event-stream';

export { INACTIVITY_DELAY_SEC, STREAM_PATH, type OfrepScope } from './bulk-answer';

export interface OfrepRouterOptions {
  features: FeatureRepository;
  /** The evaluation pipeline of `/proxy`: its context step (environment, address, enrichers). */
  pipeline: EvaluationPipeline;
  maxBodySize: number;
  /** Who calls: the evaluation endpoints' key step (`http/key-policies.ts`). */
  access: OfrepAccess;
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

/**
 * What OFREP serves beside its two evaluation endpoints (`http/endpoints/ofrep-evaluate.ts`), mounted
 * under `{prefix}/ofrep`: the change stream `GET /v1/flag-changes`, and OFREP's answers to any
 * other request there (readiness, key, 404). Also the bulk answer's steps (`bulk-answer.ts`), which
 * the bulk endpoint writes with: one memory pool and one set of stream tokens with the stream.
 */
export function ofrepRoutes(opts: OfrepRouterOptions): { router: Router; bulk: OfrepBulk } {
  const router = Router();
  const requireKey = requireOfrepKey(opts.access);
  const streamKeys = new StreamKeys();
  const scopeOf = (res: Response): OfrepScope => opts.scopeOf?.(res) ?? opts;
  const tokenOf = (key: string): string =>
    opts.access.clientKeys.includes(key) ? streamToken(key) : streamKeys.remember(key);
  const bulk = new OfrepBulk(opts.pipeline.contextLimits, tokenOf, opts.vary, opts.bodies);

  router.use(requireReady(opts.ready ?? opts.features));
  // Before the routes: the key is checked ahead of the path's flag key (a bad escape there is a 400).
  // The evaluations themselves are the front's endpoints (`http/endpoints/ofrep-*.ts`); a request
  // they do not take (another method) is answered here.
  router.use('/v1/evaluate/flags', requireKey);

  router.get(STREAM_PATH, requireStreamAccess(opts.access, streamKeys), (req, res) => {
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

/** OFREP's own answers (`errors.ts`) as Express error middleware; the rest as everywhere. */
export const ofrepErrors: ErrorRequestHandler = (err: unknown, req, res, next) => {
  if (res.headersSent || !ofrepErrorAnswer(err, req.path, res)) next(err);
};
