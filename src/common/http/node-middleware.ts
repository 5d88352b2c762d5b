import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';

/** Connect-style middleware on Node's request and response: Express's and the front's alike. */
export type NodeMiddleware = (
  req: IncomingMessage,
  res: ServerResponse,
  next: (err?: unknown) => void,
) => void;

/**
 * A connect-style library middleware (cors, compression, the body parser) typed as Express's: they
 * read and write only Node's request and response API, so the front runs them outside Express.
 */
export function asNodeMiddleware(handler: RequestHandler): NodeMiddleware {
  return handler as unknown as NodeMiddleware;
}

/** Runs middleware in order on Node's request and response; `done` gets the first error, or none. */
export function runMiddleware(
  chain: readonly NodeMiddleware[],
  req: IncomingMessage,
  res: ServerResponse,
  done: (err?: unknown) => void,
): void {
  let at = 0;
  const next = (err?: unknown): void => {
    if (err !== undefined || at === chain.length) {
      done(err);
      return;
    }
    const middleware = chain[at++];
    try {
      middleware(req, res, next);
    } catch (error) {
      done(error);
    }
  };
  next();
}
