import { Router, type Request, type Response } from 'express';
import { NotFoundError, ValidationError } from '../../common/errors/http-errors';
import { jsonBody } from '../../common/http/json-body';
import { bodyEtag } from '../engine/etag';
import type { EvaluationInput } from '../evaluation/pipeline';
import type { PipelineOf } from '../evaluation/router';
import { writeReply } from '../evaluation/write-reply';
import type { EvaluatedToggle } from '../upstream/feature-repository';

/**
 * `GET|POST /features/:name`, mounted under `{prefix}/api/frontend` after the readiness and key
 * checks: the one toggle as `POST /proxy` with `toggles: [name]` evaluates it (the same pipeline),
 * when it is enabled for the context; a 404 `NotFoundError` otherwise, the same for a disabled and
 * an unknown name, so a key holder learns nothing about names it cannot see. A 200 carries
 * `Cache-Control` and a weak ETag of its body, and a matching `If-None-Match` is a 304.
 */
export function frontendFeatureRouter(pipelineOf: PipelineOf, maxBodySize: number): Router {
  const router = Router();

  const answerFor = async (req: Request, res: Response, input: EvaluationInput): Promise<void> => {
    const pipeline = pipelineOf(res);
    const name = req.params.name;
    if (typeof name !== 'string') throw new ValidationError('The feature name is missing from the path');
    const context = await pipeline.context(input, req);
    const reply = pipeline.evaluator.reply({ kind: 'named', names: [name] }, context, undefined);
    const toggle = reply.notModified ? undefined : onlyToggle(reply.body);
    if (!toggle?.enabled) {
      throw new NotFoundError(`Feature "${name}" is not enabled for this context, or does not exist`);
    }
    const body = JSON.stringify(toggle);
    const etag = bodyEtag(body);
    const notModified = pipeline.matches(req, etag);
    writeReply(res, notModified ? { notModified, etag } : { notModified, body, etag }, pipeline.vary);
  };

  router.get('/features/:name', async (req, res) => {
    await answerFor(req, res, pipelineOf(res).fromQuery(queryOf(req.originalUrl)));
  });

  router.post('/features/:name', ...jsonBody(maxBodySize), async (req, res) => {
    await answerFor(req, res, pipelineOf(res).fromBody(req.body));
  });

  return router;
}

function queryOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? '' : url.slice(q + 1);
}

/** The single toggle of a `{"toggles": [...]}` answer for one name. */
function onlyToggle(body: string | Buffer): EvaluatedToggle | undefined {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  return (JSON.parse(text) as { toggles: EvaluatedToggle[] }).toggles[0];
}
