import { Router, type ErrorRequestHandler, type Request, type Response } from 'express';
import type { Context } from 'unleash-client';
import type { z } from 'zod';
import {
  AuthenticationRequired,
  NoAccessError,
  NotFoundError,
  ValidationError,
} from '../../common/errors/http-errors';
import { etagMatches, weakEtag } from '../../common/http/etag';
import { jsonBody } from '../../common/http/json-body';
import { checkContextInput, normalise } from '../context/build-context';
import type { EvaluationPipeline } from '../evaluation/pipeline';
import { describeIssues } from '../context/schemas';
import { detailsFor, evaluateWithDetails } from '../evaluation/details';
import { derivedEtagOf } from '../evaluation/etag';
import type { Selection } from '../evaluation/evaluator';
import { requireReady } from '../readiness/require-ready';
import type { FeatureRepository } from '../upstream/feature-repository';
import { requireOfrepKey, requireStreamAccess, StreamKeys, streamToken, type OfrepAuthOptions } from './auth';
import type { ChangeStreams } from './event-stream';
import { flagNotFound, toOfrepResult, type OfrepResult } from './mapping';
import { BodyBuffers } from '../evaluation/body-buffers';
import { joinEntries } from '../evaluation/toggle-json';
import { bulkFlags } from './bulk';
import { ofrepRequestSchema } from './schemas';

/** Seconds a hidden browser tab keeps its change stream open (ADR-0008's default). */
export const INACTIVITY_DELAY_SEC = 120;

/** Path of the change stream under `{prefix}/ofrep`. */
export const STREAM_PATH = '/v1/flag-changes';

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
}

/** The definitions, pipeline and change streams one key scope is served from. */
export interface OfrepScope {
  features: FeatureRepository;
  pipeline: EvaluationPipeline;
  streams: ChangeStreams;
}

/** An error answered in OFREP's own shape: `{errorCode, errorDetails}`, with `key` for one flag. */
class OfrepError extends Error {
  constructor(
    readonly status: number,
    readonly body: { key?: string; errorCode: string; errorDetails: string },
  ) {
    super(body.errorDetails);
  }
}

function sendJson(res: Response, status: number, body: unknown): void {
  res.status(status).type('application/json; charset=utf-8').send(JSON.stringify(body));
}

/** 400 in OFREP's words: problems inside `context` are INVALID_CONTEXT, the rest PARSE_ERROR. */
function badRequest(error: z.ZodError, key: string | undefined): OfrepError {
  const inContext = error.issues.some((issue) => issue.path[0] === 'context');
  return new OfrepError(400, {
    ...(key === undefined ? {} : { key }),
    errorCode: inContext ? 'INVALID_CONTEXT' : 'PARSE_ERROR',
    errorDetails: `Invalid request body: ${describeIssues(error)}`,
  });
}

function invalidContext(message: string, key: string | undefined): OfrepError {
  return new OfrepError(400, {
    ...(key === undefined ? {} : { key }),
    errorCode: 'INVALID_CONTEXT',
    errorDetails: `Invalid request body: ${message}`,
  });
}

/**
 * `POST {prefix}/ofrep/v1/evaluate/flags/{key}`, `POST {prefix}/ofrep/v1/evaluate/flags` and the
 * change stream `GET {prefix}/ofrep/v1/flag-changes`, mounted under `{prefix}/ofrep`.
 */
/** OFREP's bulk answer lists every flag. */
const ALL_FLAGS: Selection = { kind: 'all' };

export function ofrepRouter(opts: OfrepRouterOptions): Router {
  const router = Router();
  const requireKey = requireOfrepKey(opts.auth);
  const streamKeys = new StreamKeys();
  const scopeOf = (res: Response): OfrepScope => opts.scopeOf?.(res) ?? opts;
  const tokenOf = (key: string): string =>
    opts.auth.resolveKey && !opts.auth.clientKeys.includes(key) ? streamKeys.remember(key) : streamToken(key);
  const bodies = new BodyBuffers();

  const evaluationContext = async (
    req: Request,
    res: Response,
    key: string | undefined,
  ): Promise<Context> => {
    const rawContext = (req.body as { context?: unknown } | undefined)?.context;
    try {
      checkContextInput(rawContext, opts.pipeline.contextLimits);
    } catch (err) {
      if (err instanceof ValidationError) throw invalidContext(err.message, key);
      throw err;
    }
    const parsed = ofrepRequestSchema.safeParse(req.body ?? {});
    if (!parsed.success) throw badRequest(parsed.error, key);
    const { targetingKey, ...rest } = parsed.data.context ?? {};
    // OpenFeature's targetingKey is the user: it wins over a `userId` sent beside it.
    const clientPart = normalise(
      targetingKey === undefined || targetingKey === null ? rest : { ...rest, userId: targetingKey },
    );
    return scopeOf(res).pipeline.context({ clientContext: clientPart, toggles: undefined }, req);
  };

  router.use(requireReady(opts.ready ?? opts.features));
  // Before the routes: the key is checked ahead of the path's flag key (a bad escape there is a 400).
  router.use('/v1/evaluate/flags', requireKey);

  router.post('/v1/evaluate/flags/:key', ...jsonBody(opts.maxBodySize), async (req, res) => {
    const key = String(req.params.key);
    const context = await evaluationContext(req, res, key);
    const details = evaluateWithDetails(scopeOf(res).features, key, context);
    const result: OfrepResult = details ? toOfrepResult(details) : flagNotFound(key);
    const status = 'errorCode' in result ? (result.errorCode === 'FLAG_NOT_FOUND' ? 404 : 500) : 200;
    res.setHeader('Cache-Control', 'no-store');
    sendJson(res, status, result);
  });

  router.post('/v1/evaluate/flags', ...jsonBody(opts.maxBodySize), async (req, res) => {
    const context = await evaluationContext(req, res, undefined);
    const { features, pipeline, streams } = scopeOf(res);
    res.setHeader('Cache-Control', 'no-cache');
    // A pure answer (every flag a function of the definitions and this context) has a validator
    // derived from them, known before evaluating: a matching If-None-Match costs no evaluation.
    const prepared = pipeline.prepare(ALL_FLAGS, context);
    const derived = prepared.etag === undefined ? undefined : derivedEtagOf('ofrep-bulk', prepared.etag);
    if (derived !== undefined && etagMatches(req.headers['if-none-match'], derived)) {
      res.setHeader('ETag', derived);
      res.status(304).end();
      return;
    }
    // every flag through the plan of `/proxy`, each result serialised once per outcome and reason
    const entries =
      bulkFlags(features, pipeline.evaluator, prepared, context) ??
      plainFlags(features, context).map((r) => Buffer.from(JSON.stringify(r)));
    const eventStreams = [
      {
        type: 'sse',
        url: streamUrl(req, tokenOf(String(res.locals.clientKey)), streams.version().id),
        inactivityDelaySec: INACTIVITY_DELAY_SEC,
      },
    ];
    // the whole body copied once: `{"flags":[...],"eventStreams":[...]}`
    const tail = Buffer.from(`],"eventStreams":${JSON.stringify(eventStreams)}}`);
    let release: (() => void) | undefined;
    const body = joinEntries(FLAGS_HEAD, entries, tail, (length) => {
      const taken = bodies.take(length);
      release = taken.release;
      return taken.body;
    });
    // The validator covers the flag values only (`[...]`): the stream URL's `since` changing alone is
    // no change. Derived when still valid after evaluating (no date passed meanwhile), else of the flags.
    const fresh = derived !== undefined && pipeline.evaluator.refresh(prepared) === prepared;
    const etag = fresh
      ? derived
      : weakEtag(body.subarray(FLAGS_HEAD.length - 1, body.length - tail.length + 1));
    res.setHeader('ETag', etag);
    if (etagMatches(req.headers['if-none-match'], etag)) {
      release?.();
      res.status(304).end();
      return;
    }
    // the body's memory is reused once the response is written out (never on an abort)
    if (release) res.once('finish', release);
    res.status(200).type('application/json; charset=utf-8').send(body);
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
  return router;
}

const FLAGS_HEAD = Buffer.from('{"flags":[');

/** Every flag through `details.ts`, while the SDK's full evaluation must run (see `bulkFlags`). */
function plainFlags(features: FeatureRepository, context: Context): OfrepResult[] {
  const evaluate = detailsFor(features, context);
  return features.toggles().map((feature) => {
    const details = evaluate(feature.name);
    return details ? toOfrepResult(details) : flagNotFound(feature.name);
  });
}

/** The absolute stream URL for this request's host: a browser's EventSource needs one. */
function streamUrl(req: Request, token: string, since: string): string {
  const query = new URLSearchParams({ token, since });
  return `${req.protocol}://${req.host}${req.baseUrl}${STREAM_PATH}?${query.toString()}`;
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
const ofrepErrors: ErrorRequestHandler = (err: unknown, req, res, next) => {
  if (res.headersSent) {
    next(err);
    return;
  }
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
