import { Router } from 'express';
import { AuthenticationRequired, NoAccessError } from '../../common/errors/http-errors';
import { jsonBody } from '../../common/http/json-body';
import { presentedToken } from '../auth/authenticate';
import type { TokenStore } from '../auth/token-store';
import { parsePayload } from '../http/validate';
import { validateTokensSchema, type EdgeToken } from './schemas';

export interface EdgeDeps {
  tokens: TokenStore;
  bodyLimit: number;
}

/**
 * `POST /edge/validate` at the server's root, as Unleash serves it for Unleash Edge and the proxy:
 * which of the given tokens are valid, with their type, environment and projects. Unknown and
 * revoked tokens are left out of the answer.
 *
 * Authorization: none is needed (knowing a token is what is being checked); an admin token is
 * accepted. A client or frontend token in `Authorization` is a 403, as on Unleash, and an unknown
 * one a 401 — both before the body is read.
 */
export function edgeRouter({ tokens, bodyLimit }: EdgeDeps): Router {
  const router = Router();

  router.post(
    '/edge/validate',
    async (req, _res, next) => {
      const secret = presentedToken(req);
      if (secret !== undefined) {
        const info = await tokens.lookup(secret);
        if (!info) throw new AuthenticationRequired('The API token in the Authorization header is not valid');
        if (info.type !== 'admin') {
          throw new NoAccessError(
            `A ${info.type} token cannot be used on /edge/validate; send no Authorization header or an admin token`,
          );
        }
      }
      next();
    },
    ...jsonBody(bodyLimit),
    async (req, res) => {
      const body = parsePayload(validateTokensSchema, req.body);
      const valid = await tokens.validate(body.tokens);
      const answer: EdgeToken[] = valid.map((t) => ({
        token: t.token,
        type: t.type,
        ...(t.environment === null ? {} : { environment: t.environment }),
        projects: t.projects,
      }));
      res.json({ tokens: answer });
    },
  );

  return router;
}
