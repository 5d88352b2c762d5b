import { Router } from 'express';
import { jsonBody } from '../../common/http/json-body';
import type { EvaluationPipeline } from './pipeline';

/**
 * `GET|POST /` and `GET|POST /all` of an evaluation path (`{prefix}/proxy`, `{prefix}/api/frontend`):
 * Express adapts the request (body parsing: 415, 413, 400), the pipeline does the rest.
 */
export function evaluationRouter(pipeline: EvaluationPipeline, maxBodySize: number): Router {
  const router = Router();
  const body = jsonBody(maxBodySize);
  router.get('/', (req, res) => pipeline.handle('enabled', req, res));
  router.post('/', ...body, (req, res) => pipeline.handle('enabled', req, res));
  router.get('/all', (req, res) => pipeline.handle('all', req, res));
  router.post('/all', ...body, (req, res) => pipeline.handle('all', req, res));
  return router;
}
