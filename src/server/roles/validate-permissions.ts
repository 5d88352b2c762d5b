import { ValidationError } from '../../common/errors/http-errors';
import { findPermission } from './permissions';
import type { RolePermission } from './role-store';
import type { CreateRoleRequest } from './schemas';

/**
 * Checks a role's permissions against the catalogue, its type and the configured environments, and
 * returns them without duplicates. Throws a ValidationError naming the offending permission.
 * An `environment` on a root or project permission does not apply and is dropped.
 */
export function validateRolePermissions(
  type: CreateRoleRequest['type'],
  permissions: CreateRoleRequest['permissions'],
  environments: readonly string[],
): RolePermission[] {
  const result = new Map<string, RolePermission>();
  permissions.forEach((requested, i) => {
    const at = `permissions[${i}]`;
    const def = findPermission(requested.name);
    if (!def) {
      throw new ValidationError(
        `${at}.name: unknown permission "${requested.name}"; GET /api/admin/permissions lists them`,
      );
    }
    if (!def.assignable) {
      throw new ValidationError(`${at}.name: the permission ${def.name} cannot be given to a custom role`);
    }
    if (type === 'root-custom' && def.kind !== 'root') {
      throw new ValidationError(
        `${at}.name: ${def.name} is ${def.kind === 'environment' ? 'an' : 'a'} ${def.kind} permission; a root-custom role takes only root permissions`,
      );
    }
    if (type === 'custom' && def.kind === 'root') {
      throw new ValidationError(
        `${at}.name: ${def.name} is a root permission; a custom role takes only project and environment permissions`,
      );
    }
    let permission: RolePermission = { name: def.name };
    if (def.kind === 'environment') {
      const env = requested.environment;
      if (env === undefined || env === '') {
        throw new ValidationError(
          `${at}.environment: ${def.name} is an environment permission and needs an environment (one of ${environments.join(', ')})`,
        );
      }
      if (!environments.includes(env)) {
        throw new ValidationError(
          `${at}.environment: environment "${env}" of ${def.name} does not exist (known: ${environments.join(', ')})`,
        );
      }
      permission = { name: def.name, environment: env };
    }
    result.set(`${permission.name}\u0000${permission.environment ?? ''}`, permission);
  });
  return [...result.values()];
}
