import type { IncomingMessage } from 'node:http';
import type { Response } from 'express';
import type { z } from 'zod';
import { ValidationError } from '../../common/errors/http-errors';
import { describeIssues } from '../context/schemas';
import type { ClientUsage } from './client-usage';
import { clientMetricsSchema, clientRegistrationSchema } from './schemas';
import { chainOf } from './usage-chain';

/** What a usage request's gate found: the parsed JSON body and the key's scope. */
export interface UsageCall {
  readonly body: unknown;
  readonly scope: { readonly environment: { readonly clientUsage: ClientUsage } };
}

function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new ValidationError(`Invalid request body: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/**
 * The client's address (through `trustProxy` as Express resolves it, else the connection's): the
 * unit of fairness between clients.
 */
export function sourceOf(req: IncomingMessage): string {
  return (req as { ip?: string }).ip ?? req.socket.remoteAddress ?? '';
}

/**
 * The answers of `POST /client/metrics` (alias `/all/client/metrics`) and `POST /client/register`:
 * the body validated, kept in the usage of the key's environment, answered 202, forwarded upstream
 * at the metrics interval.
 */
export const usageAnswers = {
  metrics(req: IncomingMessage, res: Response, call: UsageCall): void {
    call.scope.environment.clientUsage.recordMetrics(
      parseBody(clientMetricsSchema, call.body),
      sourceOf(req),
      chainOf(req.headers),
    );
    res.status(202).end();
  },
  register(req: IncomingMessage, res: Response, call: UsageCall): void {
    call.scope.environment.clientUsage.recordRegistration(
      parseBody(clientRegistrationSchema, call.body),
      sourceOf(req),
      chainOf(req.headers),
    );
    res.status(202).end();
  },
};
