import type { RequestHandler } from 'express';
import { AuthenticationRequired } from '../../common/errors/http-errors';
import { keyFromHeader, secretMatcher } from '../auth/client-key';

/** Server-side SDK tokens always travel in `Authorization`, as `unleash-client` sends them. */
const TOKEN_HEADER = 'authorization';
const TOKENS_OPTION = 'expServerSideSdkConfig.tokens / EXP_SERVER_SIDE_SDK_CONFIG_TOKENS';

/**
 * 401 unless `Authorization` carries one of the server-side SDK tokens (`<token>` or
 * `Bearer <token>`). Client keys are not accepted; with no tokens configured every request is a 401
 * that names the option to set.
 */
export function requireServerToken(tokens: readonly string[]): RequestHandler {
  const matches = secretMatcher(tokens);
  return (req, _res, next) => {
    if (tokens.length === 0) {
      next(
        new AuthenticationRequired(
          `Server-side SDK access is not configured on this proxy: set ${TOKENS_OPTION}`,
        ),
      );
      return;
    }
    const token = keyFromHeader(req.headers[TOKEN_HEADER]);
    if (token === undefined) {
      next(
        new AuthenticationRequired('Missing server-side SDK token: send it in the "authorization" header'),
      );
    } else if (!matches(token)) {
      next(new AuthenticationRequired('Invalid server-side SDK token in the "authorization" header'));
    } else {
      next();
    }
  };
}

export interface ClientOrServerAuthOptions {
  clientKeysHeaderName: string;
  clientKeys: readonly string[];
  serverTokens: readonly string[];
}

/**
 * 401 unless the request carries a client key (in the client-key header) or a server-side SDK token
 * (in `Authorization`): the usage-metric endpoints serve frontend and server-side SDKs alike.
 */
export function requireClientKeyOrServerToken(opts: ClientOrServerAuthOptions): RequestHandler {
  const isClientKey = secretMatcher(opts.clientKeys);
  const isServerToken = secretMatcher(opts.serverTokens);
  return (req, _res, next) => {
    const key = keyFromHeader(req.headers[opts.clientKeysHeaderName]);
    const token = opts.serverTokens.length > 0 ? keyFromHeader(req.headers[TOKEN_HEADER]) : undefined;
    if (key === undefined && token === undefined) {
      next(
        new AuthenticationRequired(
          `Missing client key: send it in the "${opts.clientKeysHeaderName}" header`,
        ),
      );
      return;
    }
    // Evaluate both so the time taken does not tell which kind of secret matched.
    const keyOk = key !== undefined && isClientKey(key);
    const tokenOk = token !== undefined && isServerToken(token);
    if (keyOk || tokenOk) {
      next();
    } else {
      next(
        new AuthenticationRequired(
          `Invalid client key in the "${opts.clientKeysHeaderName}" header` +
            (opts.serverTokens.length > 0 ? ' (and no valid server-side SDK token in "authorization")' : ''),
        ),
      );
    }
  };
}
