import { Router } from 'express';
import { NotFoundError, ValidationError } from '../../common/errors/http-errors';
import { jsonBody } from '../../common/http/json-body';
import { requirePermission } from '../auth/authenticate';
import { newTokenSecret, tokenProject } from '../auth/token-format';
import type { TokenStore } from '../auth/token-store';
import { parsePayload } from '../http/validate';
import { ADMIN } from '../roles/permissions';
import type { RoleStore } from '../roles/role-store';
import { createApiTokenSchema } from './schemas';

export interface ApiTokensDeps {
  tokens: TokenStore;
  roles: RoleStore;
  environments: readonly string[];
  bodyLimit: number;
}

/** Client and frontend tokens issued on the admin API (admin token already required; needs ADMIN). */
export function apiTokensRouter({ tokens, roles, environments, bodyLimit }: ApiTokensDeps): Router {
  const router = Router();

  router.post(
    '/api-tokens',
    requirePermission(roles, ADMIN, 'Creating an API token'),
    ...jsonBody(bodyLimit),
    async (req, res) => {
      const body = parsePayload(createApiTokenSchema, req.body);
      if (!environments.includes(body.environment)) {
        throw new ValidationError(
          `Request body is not valid: environment: must be one of ${environments.join(', ')} (got "${body.environment}")`,
        );
      }
      const secret = newTokenSecret(body.projects, body.environment);
      const tokenName = body.tokenName ?? null;
      const createdAt = await tokens.create({
        secret,
        type: body.type,
        environment: body.environment,
        projects: body.projects,
        tokenName,
      });
      res.status(201).json({
        secret,
        tokenName,
        type: body.type,
        environment: body.environment,
        project: tokenProject(body.projects),
        projects: body.projects,
        createdAt: createdAt.toISOString(),
      });
    },
  );

  router.delete(
    '/api-tokens/:token',
    requirePermission(roles, ADMIN, 'Revoking an API token'),
    async (req, res) => {
      if (!(await tokens.revoke(String(req.params.token)))) {
        throw new NotFoundError('No client or frontend token with this secret');
      }
      res.status(200).end();
    },
  );

  return router;
}
