import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context } from 'unleash-client';
import { etagMatches, weakEtag } from '../../common/http/etag';
import { validHost } from '../../common/http/host';
import { addVary, headWith } from '../../common/http/vary';
import type { ContextLimits } from '../context/limits';
import { sendBody } from '../compression/body-encoding';
import { BodyBuffers } from '../engine/body-buffers';
import { detailsFor } from '../engine/details';
import { derivedEtagOf } from '../engine/etag';
import type { Selection, ShapedAnswer } from '../engine/evaluator';
import type { EvaluationInput, EvaluationPipeline } from '../evaluation/pipeline';
import { joinEntries } from '../engine/toggle-json';
import type { FeatureRepository } from '../upstream/feature-repository';
import { bulkFlags } from './bulk';
import type { ScopeServing } from '../environments/environment';
import type { ScopeStreams } from './event-stream';
import { flagNotFound, toOfrepResult } from './mapping';
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
  /**
   * `{protocol}://{host}` as Express reads it (`req.protocol`, `req.host`), or undefined when the
   * request's `Host` is missing or not a valid `host[:port]` (`validHost`): the stream is then named
   * by its path alone, and a provider puts it on the origin of its own OFREP base URL.
   */
  origin: string | undefined;
  /** `{prefix}/ofrep`: where the OFREP router is mounted (`req.baseUrl`). */
  basePath: string;
  /** The CORS headers the gate remembered for the request's origin (`Call.cors`), written with the answer's. */
  cors: readonly string[];
}

/** OFREP's bulk answer lists every flag. */
const ALL_FLAGS: Selection = { kind: 'all' };
const FLAGS_HEAD = Buffer.from('{"flags":[');
const CONTENT_TYPE = 'application/json; charset=utf-8';
/** A bulk answer may be stored, and is revalidated before every use. */
const CACHE_CONTROL = 'no-cache';

/**
 * `POST {prefix}/ofrep/v1/evaluate/flags` after its key, readiness and body were checked: the one
 * steps of this kind of request, which the front's bulk endpoint (`http/endpoints/ofrep-evaluate.ts`)
 * calls. `input` reads the parsed body, `write` evaluates every flag and
 * writes the answer (derived ETag or 304, the flags, the change stream, `Cache-Control: no-cache`)
 * with Node's response API only.
 */
export class OfrepBulk {
  constructor(
    /** What one request's context may hold (the proxy's first pipeline's). */
    private readonly limits: ContextLimits,
    /** The stream token of an accepted client key (remembered when the key is not configured). */
    private readonly tokenOf: (key: string) => string,
    /** The `Vary` of every answer (`KeyVary.ofrep`): it depends on the key, in any header OFREP reads it from. */
    private readonly vary: string,
    /** Memory for answers written once (the app's, shared with evaluation). */
    private readonly bodies = new BodyBuffers(),
  ) {}

  /** The evaluation input of a parsed body; throws an `OfrepError` (400) the route answers in OFREP's shape. */
  input(body: unknown): EvaluationInput {
    return ofrepInput(body, this.limits);
  }

  /** The last answer's tail (`tailOf`) and what it was made from. */
  private lastTail: { readonly key: string; readonly bytes: Buffer } | undefined;

  /**
   * The bytes after the flags: `],"eventStreams":[...]}` with the change stream's entry. Made again
   * only when its origin, path, token or stream version differ from the last answer's (clients of
   * one deployment share them); the whole body is then copied once: `{"flags":[...],...}`.
   */
  private tailOf(request: BulkRequest, token: string, since: string): Buffer {
    const origin = request.origin === undefined ? '-' : `+${request.origin}`;
    const key = `${origin}\u0000${request.basePath}\u0000${token}\u0000${since}`;
    const last = this.lastTail;
    if (last !== undefined && last.key === key) return last.bytes;
    const eventStreams = [streamEntry(request, token, since)];
    const bytes = Buffer.from(`],"eventStreams":${JSON.stringify(eventStreams)}}`);
    this.lastTail = { key, bytes };
    return bytes;
  }

  /**
   * Evaluates every flag for the request and writes the answer (headers, status, body, compressed
   * for a client that accepts it: `compression/body-encoding.ts`), or a 304.
   */
  write(req: IncomingMessage, res: ServerResponse, request: BulkRequest): void {
    const { context, scope } = request;
    const { features, pipeline, streams } = scope;
    // the CORS headers, `Vary` and `Cache-Control` in one `writeHead` with the others, unless the
    // CORS middleware wrote its own `Vary` on the response (then merged into it, one by one)
    const head = res.hasHeader('Vary') ? undefined : headWith(request.cors, this.vary, CACHE_CONTROL);
    if (head === undefined) {
      res.setHeader('Cache-Control', CACHE_CONTROL);
      addVary(res, this.vary);
    }
    // A pure answer (every flag a function of the definitions and this context) has a validator
    // derived from them, known before evaluating: a matching If-None-Match costs no evaluation.
    const prepared = pipeline.prepare(ALL_FLAGS, context);
    const derived = prepared.etag === undefined ? undefined : derivedEtagOf('ofrep-bulk', prepared.etag);
    const ifNoneMatch = req.headers['if-none-match'];
    if (derived !== undefined && etagMatches(ifNoneMatch, derived)) {
      notModified(res, derived, head);
      return;
    }
    // every flag through the plan of `/proxy`, each result serialised once per outcome and reason,
    // a pure answer's flags kept under its validator
    const flags =
      bulkFlags(features, pipeline.evaluator, prepared, context, derived) ?? plainFlags(features, context);
    const tail = this.tailOf(request, this.tokenOf(request.key), streams.version().id);
    let release: (() => void) | undefined;
    const body = joinEntries(
      FLAGS_HEAD,
      flags.entries,
      tail,
      (length) => {
        const taken = this.bodies.take(length);
        release = taken.release;
        return taken.body;
      },
      flags.bytes,
    );
    // The validator covers the flag values only (`[...]`): the stream URL's `since` changing alone is
    // no change. Derived when still valid after evaluating (no date passed meanwhile), else of the flags.
    const fresh = derived !== undefined && pipeline.evaluator.refresh(prepared) === prepared;
    const etag = fresh
      ? derived
      : weakEtag(body.subarray(FLAGS_HEAD.length - 1, body.length - tail.length + 1));
    if (etagMatches(ifNoneMatch, etag)) {
      release?.();
      notModified(res, etag, head);
      return;
    }
    if (head === undefined) {
      res.setHeader('ETag', etag);
      res.setHeader('Content-Type', CONTENT_TYPE);
    } else head.push('ETag', etag, 'Content-Type', CONTENT_TYPE);
    sendBody(req, res, body, release, undefined, head);
  }
}

function notModified(res: ServerResponse, etag: string, head: string[] | undefined): void {
  if (head === undefined) {
    res.setHeader('ETag', etag);
    res.statusCode = 304;
  } else {
    head.push('ETag', etag);
    res.writeHead(304, head);
  }
  res.end();
}

/** Every flag through `details.ts`, while the SDK's full evaluation must run (see `bulkFlags`). */
function plainFlags(features: FeatureRepository, context: Context): ShapedAnswer {
  const evaluate = detailsFor(features, context);
  let bytes = 0;
  const entries = features.toggles().map((feature) => {
    const details = evaluate(feature.name);
    const entry = Buffer.from(JSON.stringify(details ? toOfrepResult(details) : flagNotFound(feature.name)));
    bytes += entry.length;
    return entry;
  });
  return { entries, bytes };
}

/**
 * The change stream of a bulk answer (ADR-0008): its absolute `url` on the request's origin (a
 * browser's EventSource needs one), or, when the request named no valid host, the structured
 * `endpoint` with the path alone, which providers resolve against the origin of their base URL. A
 * `Host` header is never copied into the answer unchecked.
 */
function streamEntry(
  request: BulkRequest,
  token: string,
  since: string,
): { type: 'sse'; inactivityDelaySec: number } & ({ url: string } | { endpoint: { requestUri: string } }) {
  const query = new URLSearchParams({ token, since });
  const requestUri = `${request.basePath}${STREAM_PATH}?${query.toString()}`;
  return request.origin === undefined
    ? { type: 'sse', endpoint: { requestUri }, inactivityDelaySec: INACTIVITY_DELAY_SEC }
    : { type: 'sse', url: `${request.origin}${requestUri}`, inactivityDelaySec: INACTIVITY_DELAY_SEC };
}

/** `{protocol}://{host}` of a request, when its protocol is HTTP(S) and its host a valid `host[:port]`. */
export function originOf(protocol: string, host: string | undefined): string | undefined {
  const valid = validHost(host);
  return valid !== undefined && (protocol === 'http' || protocol === 'https')
    ? `${protocol}://${valid}`
    : undefined;
}

/** What OFREP serves a key's requests from. */
export function ofrepScopeOf(serving: ScopeServing): OfrepScope {
  return {
    features: serving.features,
    pipeline: serving.pipeline,
    // a project-limited key's stream is told only of changes to what its answers depend on
    streams: serving.environment.changeStreams.of(serving.features),
  };
}
