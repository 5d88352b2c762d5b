import type { ServerResponse } from 'node:http';
import { NotReady } from '../../common/errors/http-errors';

/**
 * A key that could not be validated now: the upstream did not answer (network error, timeout, 5xx,
 * a garbled body), or the request did not get a place among those waiting (a bound of the queue or of
 * waiters). A 503 with `Retry-After`, never a 401: nothing is known against the key.
 */
export class ValidationUnavailable extends NotReady {
  constructor(
    reason: string,
    /** Seconds for `Retry-After`. */
    readonly retryAfterSeconds: number,
  ) {
    super(`flags-proxy cannot validate the client key with the upstream now (${reason}); retry later`);
  }
}

/** Sets the error's `Retry-After` on the response (the error middleware writes the body). */
export function retryAfter(res: ServerResponse, err: ValidationUnavailable): ValidationUnavailable {
  if (!res.headersSent) res.setHeader('Retry-After', String(err.retryAfterSeconds));
  return err;
}

/**
 * Aborts when the client goes before its response is finished (its connection closed), so a
 * request waiting for a validation stops being waited for.
 */
export function clientGone(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  const socket = res.socket;
  if (socket === null || socket.destroyed) {
    controller.abort();
    return controller.signal;
  }
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
