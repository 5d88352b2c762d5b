import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from 'unleash-client';
import { etagMatches, weakEtag } from '../../common/http/etag';
import type { ContextLimits } from '../context/limits';
import { BodyBuffers } from '../evaluation/body-buffers';
import { detailsFor } from '../evaluation/details';
import { derivedEtagOf } from '../evaluation/etag';
import type { Selection } from '../evaluation/evaluator';
import type { EvaluationInput, EvaluationPipeline } from '../evaluation/pipeline';
import { joinEntries } from '../evaluation/toggle-json';
import type { FeatureRepository } from '../upstream/feature-repository';
import { bulkFlags } from './bulk';
import type { ScopeStreams } from './event-stream';
import { flagNotFound, toOfrepResult, type OfrepResult } from './mapping';
import { ofrepInput } from './request-input';

/** Seconds a hidden browser tab keeps its change stream open (ADR-0008's default). */
export const INACTIVITY_DELAY_SEC = 120;

/** Path of the change stream under `{prefix}/ofrep`. */
export const STREAM_PATH = '/v1/flag-changes';

/** The definitions, pipeline and change streams one key scope is served from. */
export interface OfrepScope {
  features: FeatureRepository;
  pipeline: EvaluationPipeline;
  streams: ScopeStreams;
}

/** One bulk request, after its key, readiness and body were checked. */
export interface BulkRequest {
  /** What serves the request's key. */
  scope: OfrepScope;
  /** The full evaluation context (`bulkInput` through the scope pipeline's context step). */
  context: Context;
  /** The accepted client key (`res.locals.clientKey` of the route): its stream token goes in the answer. */
  key: string;
  /** `{protocol}://{host}{prefix}/ofrep` as Express reads it (`req.protocol`, `req.host`, `req.baseUrl`). */
  base: string;
}

/** OFREP's bulk answer lists every flag. */
const ALL_FLAGS: Selection = { kind: 'all' };
const FLAGS_HEAD = Buffer.from('{"flags":[');
const CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * `POST {prefix}/ofrep/v1/evaluate/flags` after its key, readiness and body were checked: the one
 * pipeline of this kind of request, which the Express route (`router.ts`) and the raw entry
 * (`bulk-lane.ts`) both call. `input` reads the parsed body, `write` evaluates every flag and
 * writes the answer (derived ETag or 304, the flags, the change stream, `Cache-Control: no-cache`)
 * with Node's response API only.
 */
export class OfrepBulk {
  private readonly bodies = new BodyBuffers();

  constructor(
    /** What one request's context may hold (the proxy's first pipeline's). */
    private readonly limits: ContextLimits,
    /** The stream token of an accepted client key (remembered when the key is not configured). */
    private readonly tokenOf: (key: string) => string,
  ) {}

  /** The evaluation input of a parsed body; throws an `OfrepError` (400) the route answers in OFREP's shape. */
  input(body: unknown): EvaluationInput {
    return ofrepInput(body, this.limits);
  }

  /** Evaluates every flag for the request and writes the answer (headers, status, body). */
  write(req: IncomingMessage, res: ServerResponse, request: BulkRequest): void {
    const { context, scope } = request;
    const { features, pipeline, streams } = scope;
    res.setHeader('Cache-Control', 'no-cache');
    // A pure answer (every flag a function of the definitions and this context) has a validator
    // derived from them, known before evaluating: a matching If-None-Match costs no evaluation.
    const prepared = pipeline.prepare(ALL_FLAGS, context);
    const derived = prepared.etag === undefined ? undefined : derivedEtagOf('ofrep-bulk', prepared.etag);
    const ifNoneMatch = req.headers['if-none-match'];
    if (derived !== undefined && etagMatches(ifNoneMatch, derived)) {
      notModified(res, derived);
      return;
    }
    // every flag through the plan of `/proxy`, each result serialised once per outcome and reason
    const entries =
      bulkFlags(features, pipeline.evaluator, prepared, context) ??
      plainFlags(features, context).map((r) => Buffer.from(JSON.stringify(r)));
    const eventStreams = [
      {
        type: 'sse',
        url: streamUrl(request.base, this.tokenOf(request.key), streams.version().id),
        inactivityDelaySec: INACTIVITY_DELAY_SEC,
      },
    ];
    // the whole body copied once: `{"flags":[...],"eventStreams":[...]}`
    const tail = Buffer.from(`],"eventStreams":${JSON.stringify(eventStreams)}}`);
    let release: (() => void) | undefined;
    const body = joinEntries(FLAGS_HEAD, entries, tail, (length) => {
      const taken = this.bodies.take(length);
      release = taken.release;
      return taken.body;
    });
    // The validator covers the flag values only (`[...]`): the stream URL's `since` changing alone is
    // no change. Derived when still valid after evaluating (no date passed meanwhile), else of the flags.
    const fresh = derived !== undefined && pipeline.evaluator.refresh(prepared) === prepared;
    const etag = fresh
      ? derived
      : weakEtag(body.subarray(FLAGS_HEAD.length - 1, body.length - tail.length + 1));
    if (etagMatches(ifNoneMatch, etag)) {
      release?.();
      notModified(res, etag);
      return;
    }
    res.setHeader('ETag', etag);
    res.setHeader('Content-Type', CONTENT_TYPE);
    res.setHeader('Content-Length', String(body.length));
    res.statusCode = 200;
    // the body's memory is reused once the response is written out (never on an abort)
    if (release) res.once('finish', release);
    res.end(body);
  }
}

function notModified(res: ServerResponse, etag: string): void {
  res.setHeader('ETag', etag);
  res.statusCode = 304;
  res.end();
}

/** Every flag through `details.ts`, while the SDK's full evaluation must run (see `bulkFlags`). */
function plainFlags(features: FeatureRepository, context: Context): OfrepResult[] {
  const evaluate = detailsFor(features, context);
  return features.toggles().map((feature) => {
    const details = evaluate(feature.name);
    return details ? toOfrepResult(details) : flagNotFound(feature.name);
  });
}

/** The absolute stream URL for this request's host: a browser's EventSource needs one. */
function streamUrl(base: string, token: string, since: string): string {
  const query = new URLSearchParams({ token, since });
  return `${base}${STREAM_PATH}?${query.toString()}`;
}
