import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { z } from 'zod';
import { ValidationError } from '../../common/errors/http-errors';
import { jsonBody } from '../../common/http/json-body';
import { describeIssues } from '../context/schemas';
import type { ClientUsage } from './client-usage';
import { clientMetricsSchema, clientRegistrationSchema } from './schemas';
import { chainOf } from './usage-chain';

export interface ClientMetricsRouterOptions {
  usage: ClientUsage;
  /** The usage of the request's environment, when the proxy serves several (else `usage`). */
  usageOf?: (res: Response) => ClientUsage;
  /** Authentication of these routes: a client key or a server-side SDK token. */
  auth: RequestHandler;
  maxBodySize: number;
}

function parse<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new ValidationError(`Invalid request body: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/** The client's address (through `trustProxy` as Express resolves it): the unit of fairness between clients. */
function sourceOf(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? '';
}

/**
 * `POST /client/metrics` (alias `/all/client/metrics`) and `POST /client/register`, mounted under
 * `{prefix}/proxy`: validated, answered 202, forwarded upstream at the metrics interval.
 */
export function clientMetricsRouter(opts: ClientMetricsRouterOptions): Router {
  const router = Router();
  const guard = [opts.auth, ...jsonBody(opts.maxBodySize)];

  const metrics: RequestHandler = (req, res) => {
    (opts.usageOf?.(res) ?? opts.usage).recordMetrics(
      parse(clientMetricsSchema, req.body),
      sourceOf(req),
      chainOf(req.headers),
    );
    res.status(202).end();
  };
  router.post('/client/metrics', ...guard, metrics);
  router.post('/all/client/metrics', ...guard, metrics);

  const register: RequestHandler = (req, res) => {
    (opts.usageOf?.(res) ?? opts.usage).recordRegistration(
      parse(clientRegistrationSchema, req.body),
      sourceOf(req),
      chainOf(req.headers),
    );
    res.status(202).end();
  };
  router.post('/client/register', ...guard, register);
  router.post('/all/client/register', ...guard, register);

  return router;
}
