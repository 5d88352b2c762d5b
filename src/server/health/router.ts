import { Router } from 'express';
import { NotReady } from '../../common/errors/http-errors';
import type { Db } from '../storage/db';

/** `GET /health`: 200 when the database answers, 503 NotReady otherwise. No token needed. */
export function healthRouter(db: Db): Router {
  const router = Router();
  router.get('/health', async (_req, res) => {
    try {
      await db.query('SELECT 1');
    } catch {
      throw new NotReady('The database is not reachable');
    }
    res.json({ health: 'GOOD' });
  });
  return router;
}
