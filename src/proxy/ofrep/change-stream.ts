import type { Request, Response } from 'express';
import type { Call } from '../http/endpoint';
import type { BodyBuffers } from '../engine/body-buffers';
import type { EvaluationPipeline } from '../evaluation/pipeline';
import { StreamKeys, streamToken } from './auth';
import { OfrepBulk, type OfrepScope } from './bulk-answer';

export interface OfrepPartsOptions {
  /** The evaluation pipeline of `/proxy`: its context limits. */
  pipeline: EvaluationPipeline;
  /** The configured client keys (their stream tokens need no entry in `StreamKeys`). */
  clientKeys: readonly string[];
  /** What serves the request's key scope. */
  scopeOf: (call: Call) => OfrepScope;
  /** The `Vary` of every evaluation answer (`KeyVary.ofrep`): each header the key may travel in. */
  vary: string;
  /** Memory for bulk answers written once: the app's (else one of its own). */
  bodies?: BodyBuffers;
}

/**
 * What OFREP's endpoints (`http/endpoints/ofrep-*.ts`) answer with besides the evaluation: the bulk
 * answer's steps (`bulk-answer.ts`), the stream tokens it hands out (`StreamKeys`: the change
 * stream's key step opens them), and the change stream `GET /v1/flag-changes` itself.
 */
export function ofrepParts(opts: OfrepPartsOptions): {
  bulk: OfrepBulk;
  streamKeys: StreamKeys;
  changeStream: (req: Request, res: Response, call: Call) => void;
} {
  const streamKeys = new StreamKeys();
  const tokenOf = (key: string): string =>
    opts.clientKeys.includes(key) ? streamToken(key) : streamKeys.remember(key);
  const bulk = new OfrepBulk(opts.pipeline.contextLimits, tokenOf, opts.vary, opts.bodies);
  const changeStream = (req: Request, res: Response, call: Call): void => {
    const lastEventId = req.headers['last-event-id'];
    const since = typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : req.query.since;
    opts.scopeOf(call).streams.accept(res, typeof since === 'string' ? since : undefined);
  };
  return { bulk, streamKeys, changeStream };
}
