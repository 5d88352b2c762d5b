import { Router, type Response } from 'express';
import { jsonBody } from '../../common/http/json-body';
import type { EvaluationPipeline } from './pipeline';

/**
 * `GET|POST /` and `GET|POST /all` of an evaluation path (`{prefix}/proxy`, `{prefix}/api/frontend`):
 * Express adapts the request (body parsing: 415, 413, 400), the pipeline does the rest.
 */
export function evaluationRouter(pipelineOf: PipelineOf, maxBodySize: number): Router {
  const router = Router();
  const body = jsonBody(maxBodySize);
  router.get('/', (req, res) => pipelineOf(res).handle('enabled', req, res));
  router.post('/', ...body, (req, res) => pipelineOf(res).handle('enabled', req, res));
  router.get('/all', (req, res) => pipelineOf(res).handle('all', req, res));
  router.post('/all', ...body, (req, res) => pipelineOf(res).handle('all', req, res));
  return router;
}

/** The pipeline that serves a request: its key's scope's (set by the key step in front of the routes). */
export type PipelineOf = (res: Response) => EvaluationPipeline;
