import type { IncomingMessage } from 'node:http';
import type { Request } from 'express';
import type { Context } from 'unleash-client';
import { EndpointDisabled, ValidationError } from '../../common/errors/http-errors';
import { etagMatches } from '../../common/http/etag';
import type { ContextEnricher } from '../config/types';
import { completeContext, contextFromBody, contextFromQuery } from '../context/build-context';
import type { ContextLimits } from '../context/limits';
import { describeIssues, proxyBodyEnvelopeSchema } from '../context/schemas';
import type { Evaluator, Prepared, Reply, Selection } from '../engine/evaluator';

/** What an evaluation endpoint lists: enabled toggles (`/proxy`) or all of them (`/proxy/all`). */
export type Listing = 'enabled' | 'all';

export interface PipelineOptions {
  evaluator: Evaluator;
  environment: string | undefined;
  enrichers: readonly ContextEnricher[];
  enableAllEndpoint: boolean;
  /** What one request's context may hold; over a limit is a 400 naming it. */
  contextLimits: ContextLimits;
  /** The `Vary` of every answer (`KeyVary.evaluation`): it depends on the key. */
  vary: string;
}

/** A request's context and selection, read from its query (GET) or body (POST). */
export interface EvaluationInput {
  readonly clientContext: Context;
  readonly toggles: readonly string[] | undefined;
}

/**
 * The steps of a scope's evaluation requests after the front's gate (readiness, key, body): input →
 * context → selection → evaluation and validator. The endpoints (`http/endpoints/`) call them and
 * write the answer.
 */
export class EvaluationPipeline {
  constructor(private readonly options: PipelineOptions) {}

  get evaluator(): Evaluator {
    return this.options.evaluator;
  }

  /** The `Vary` of every answer of this pipeline (200 and 304): `Accept-Encoding` and the key's header. */
  get vary(): string {
    return this.options.vary;
  }

  /** True when the request's `If-None-Match` names this ETag. */
  matches(req: IncomingMessage, etag: string): boolean {
    return etagMatches(req.headers['if-none-match'], etag);
  }

  /** True when a context is the query and the socket address alone (no enrichers to await). */
  get synchronous(): boolean {
    return this.options.enrichers.length === 0;
  }

  /** What one request's context may hold. */
  get contextLimits(): ContextLimits {
    return this.options.contextLimits;
  }

  /** Input of a GET: the query string (400 for a parameter given twice, or over a limit). */
  fromQuery(query: string): EvaluationInput {
    return { clientContext: contextFromQuery(query, this.contextLimits), toggles: undefined };
  }

  /**
   * Input of a POST: the parsed JSON body (400 naming the field that is wrong). The context is the
   * body's `context`, or, without that key, the body's own fields beside `toggles` (Unleash Edge's
   * form: `{"userId": "u1", "properties": {...}}`).
   */
  fromBody(body: unknown): EvaluationInput {
    const atRoot = isObject(body) && !('context' in body) ? contextAtRoot(body) : undefined;
    const parsed = proxyBodyEnvelopeSchema.safeParse(atRoot ?? body);
    if (!parsed.success) throw new ValidationError(`Invalid request body: ${describeIssues(parsed.error)}`);
    return {
      clientContext: contextFromBody(parsed.data.context, this.contextLimits),
      toggles: parsed.data.toggles,
    };
  }

  /** 501 for `/all` unless enabled (`basePath` names the path asked for); then which toggles are asked for. */
  selection(listing: Listing, input: EvaluationInput, basePath = '/proxy'): Selection {
    if (listing === 'all' && !this.options.enableAllEndpoint)
      throw new EndpointDisabled(
        `${basePath}/all is disabled; enable it with enableAllEndpoint or ENABLE_ALL_ENDPOINT=true, without DISABLE_ALL_ENDPOINT=true`,
      );
    if (input.toggles) return { kind: 'named', names: input.toggles };
    return { kind: listing };
  }

  /** The context without enrichers: the client's fields, the configured environment, the socket address. */
  baseContext(input: EvaluationInput, req: IncomingMessage): Context {
    return completeContext(input.clientContext, req as Request, this.options.environment);
  }

  /**
   * The full evaluation context: the base context through every enricher, in file order. With
   * enrichers the app serves every request through Express (`createApp`'s listener is the app), so
   * `req` is Express's request, as enrichers are promised.
   */
  async context(input: EvaluationInput, req: IncomingMessage): Promise<Context> {
    let context = this.baseContext(input, req);
    for (const enrich of this.options.enrichers) context = await enrich(context, req as Request);
    return context;
  }

  /** Evaluation and validator: the toggle list, or 304 when the client's `If-None-Match` still holds. */
  reply(req: IncomingMessage, selection: Selection, context: Context): Reply {
    return this.answer(req, this.prepare(selection, context));
  }

  /** The first half of `reply`: the context against the definitions, and the derived ETag of a pure answer. */
  prepare(selection: Selection, context: Context): Prepared {
    return this.options.evaluator.prepare(selection, context);
  }

  /** The second half of `reply`: 304 on the client's `If-None-Match`, a kept answer, or an evaluation. */
  answer(req: IncomingMessage, prepared: Prepared): Reply {
    return this.options.evaluator.answer(prepared, req.headers['if-none-match']);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Edge's body form as ours: `{context: <the fields beside toggles>, toggles}`. */
function contextAtRoot(body: Record<string, unknown>): {
  context: Record<string, unknown>;
  toggles?: unknown;
} {
  const { toggles, ...context } = body;
  return toggles === undefined ? { context } : { context, toggles };
}
