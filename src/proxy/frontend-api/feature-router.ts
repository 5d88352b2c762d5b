import { Router, type Request, type Response } from 'express';
import type { Context } from 'unleash-client';
import { NotFoundError, ValidationError } from '../../common/errors/http-errors';
import { weakEtag } from '../../common/http/etag';
import { jsonBody } from '../../common/http/json-body';
import type { ContextEnricher } from '../config/types';
import { completeContext, contextFromBody, contextFromQuery } from '../context/build-context';
import { describeIssues, proxyBodySchema } from '../context/schemas';
import type { Evaluator } from '../evaluation/evaluator';
import { sendAnswer } from '../evaluation/send-toggles';
import type { EvaluatedToggle } from '../upstream/feature-repository';

export interface FeatureRouterOptions {
  /** The app's evaluator, shared with `/proxy`: one plan, one cache, one set of usage counts. */
  evaluator: Evaluator;
  environment: string | undefined;
  maxBodySize: number;
  enrichers: readonly ContextEnricher[];
}

/**
 * `GET|POST /features/:name`, mounted under `{prefix}/api/frontend` after the readiness and key
 * checks: the one toggle as `POST /proxy` with `toggles: [name]` evaluates it, when it is enabled
 * for the context; a 404 `NotFoundError` otherwise, the same for a disabled and an unknown name
 * (as the Unleash frontend API answers, a key holder learns nothing about names it cannot see).
 * A 200 carries `Cache-Control` and a weak ETag of its body, and a matching `If-None-Match` is a 304.
 */
export function frontendFeatureRouter(opts: FeatureRouterOptions): Router {
  const router = Router();

  const answerFor = async (req: Request, res: Response, clientPart: Context): Promise<void> => {
    const name = req.params.name;
    if (typeof name !== 'string') throw new ValidationError('The feature name is missing from the path');
    let context = completeContext(clientPart, req, opts.environment);
    for (const enrich of opts.enrichers) context = await enrich(context, req);
    const toggle = onlyToggle(opts.evaluator.answer({ kind: 'named', names: [name] }, context).body);
    if (!toggle?.enabled) {
      throw new NotFoundError(`Feature "${name}" is not enabled for this context, or does not exist`);
    }
    const body = JSON.stringify(toggle);
    sendAnswer(req, res, { body, etag: weakEtag(body) });
  };

  router.get('/features/:name', async (req, res) => {
    await answerFor(req, res, contextFromQuery(req.query));
  });

  router.post('/features/:name', ...jsonBody(opts.maxBodySize), async (req, res) => {
    const parsed = proxyBodySchema.safeParse(req.body);
    if (!parsed.success) throw new ValidationError(`Invalid request body: ${describeIssues(parsed.error)}`);
    await answerFor(req, res, contextFromBody((req.body as { context?: unknown }).context));
  });

  return router;
}

/** The single toggle of a `{"toggles": [...]}` answer for one name. */
function onlyToggle(body: string | Buffer): EvaluatedToggle | undefined {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  return (JSON.parse(text) as { toggles: EvaluatedToggle[] }).toggles[0];
}
