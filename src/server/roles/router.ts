import { Router } from 'express';
import { NotFoundError, ValidationError } from '../../common/errors/http-errors';
import { jsonBody } from '../../common/http/json-body';
import { requirePermission } from '../auth/authenticate';
import { parsePayload } from '../http/validate';
import { ADMIN, permissionCatalogue } from './permissions';
import type { RoleStore } from './role-store';
import { createRoleSchema } from './schemas';
import { validateRolePermissions } from './validate-permissions';

export interface RolesDeps {
  roles: RoleStore;
  environments: readonly string[];
  bodyLimit: number;
}

/** Roles and the permission catalogue, under `/api/admin` (admin token already required). */
export function rolesRouter({ roles, environments, bodyLimit }: RolesDeps): Router {
  const router = Router();

  router.get('/permissions', (_req, res) => {
    res.json(permissionCatalogue(environments));
  });

  router.get('/roles', async (_req, res) => {
    res.json({ version: 1, roles: await roles.list() });
  });

  router.get('/roles/:id', async (req, res) => {
    const raw = req.params.id;
    if (!/^\d{1,9}$/.test(raw))
      throw new ValidationError(`Path parameter "id" must be a role id, a whole number (got "${raw}")`);
    const role = await roles.get(Number(raw));
    if (!role) throw new NotFoundError(`No role with id ${raw}`);
    res.json({ ...role, permissions: await roles.permissionsOf(role.id) });
  });

  router.post(
    '/roles',
    requirePermission(roles, ADMIN, 'Creating a role'),
    ...jsonBody(bodyLimit),
    async (req, res) => {
      const body = parsePayload(createRoleSchema, req.body);
      const permissions = validateRolePermissions(body.type, body.permissions, environments);
      const role = await roles.create({
        name: body.name,
        description: body.description,
        type: body.type,
        permissions,
      });
      res.status(200).json({ version: 1, roles: role });
    },
  );

  return router;
}
