import { Router, type Request } from 'express';
import type { Context } from 'unleash-client';
import { EndpointDisabled, ValidationError } from '../../common/errors/http-errors';
import { jsonBody } from '../../common/http/json-body';
import type { ContextEnricher } from '../config/types';
import { completeContext, contextFromBody, contextFromQuery } from '../context/build-context';
import { describeIssues, proxyBodySchema } from '../context/schemas';
import type { FeatureRepository } from '../upstream/feature-repository';
import { Evaluator } from './evaluator';
import { sendAnswer } from './send-toggles';

export interface EvaluationRouterOptions {
  features: FeatureRepository;
  environment: string | undefined;
  enableAllEndpoint: boolean;
  maxBodySize: number;
  enrichers: readonly ContextEnricher[];
  /** Shared with the fast lane, so both use one plan and one cache. */
  evaluator?: Evaluator;
}

/** `GET|POST /proxy` and `GET|POST /proxy/all`, mounted under `{prefix}/proxy`. */
export function evaluationRouter(opts: EvaluationRouterOptions): Router {
  const evaluator = opts.evaluator ?? new Evaluator(opts.features);
  const router = Router();

  const buildContext = async (clientPart: Context, req: Request): Promise<Context> => {
    let context = completeContext(clientPart, req, opts.environment);
    for (const enrich of opts.enrichers) context = await enrich(context, req);
    return context;
  };

  const parseBody = (body: unknown) => {
    const parsed = proxyBodySchema.safeParse(body);
    if (!parsed.success) throw new ValidationError(`Invalid request body: ${describeIssues(parsed.error)}`);
    return {
      context: contextFromBody(
        body && typeof body === 'object' ? (body as { context?: unknown }).context : undefined,
      ),
      toggles: parsed.data.toggles,
    };
  };

  const named = (names: readonly string[]) => ({ kind: 'named', names }) as const;

  const requireAllEnabled = () => {
    if (!opts.enableAllEndpoint) {
      throw new EndpointDisabled(
        '/proxy/all is disabled; enable it with enableAllEndpoint or ENABLE_ALL_ENDPOINT=true',
      );
    }
  };

  router.get('/', async (req, res) => {
    const context = await buildContext(contextFromQuery(req.query), req);
    sendAnswer(req, res, evaluator.answer({ kind: 'enabled' }, context));
  });

  router.post('/', ...jsonBody(opts.maxBodySize), async (req, res) => {
    const body = parseBody(req.body);
    const context = await buildContext(body.context, req);
    const selection = body.toggles ? named(body.toggles) : ({ kind: 'enabled' } as const);
    sendAnswer(req, res, evaluator.answer(selection, context));
  });

  router.get('/all', async (req, res) => {
    requireAllEnabled();
    const context = await buildContext(contextFromQuery(req.query), req);
    sendAnswer(req, res, evaluator.answer({ kind: 'all' }, context));
  });

  router.post('/all', ...jsonBody(opts.maxBodySize), async (req, res) => {
    const body = parseBody(req.body);
    requireAllEnabled();
    const context = await buildContext(body.context, req);
    const selection = body.toggles ? named(body.toggles) : ({ kind: 'all' } as const);
    sendAnswer(req, res, evaluator.answer(selection, context));
  });

  return router;
}
