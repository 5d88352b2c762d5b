import { z } from 'zod';

const text = (what: string) => z.string({ error: `${what} must be a string` });

/** One permission of a role creation request; fields other than name and environment are ignored. */
export const permissionRequestSchema = z.object({
  name: text('name').trim().min(1, 'must be a non-empty permission name'),
  environment: text('environment').trim().optional(),
});

/**
 * `POST /api/admin/roles` (spec 2.6): a `root-custom` role with root permissions or a `custom`
 * (project) role with project and environment permissions. `type` defaults to `custom`,
 * `description` to "" and `permissions` to []. Unknown fields are ignored.
 */
export const createRoleSchema = z.object(
  {
    name: text('name').trim().min(1, 'must be a non-empty string').max(100, 'must be at most 100 characters'),
    description: text('description').max(2000, 'must be at most 2000 characters').default(''),
    type: z.enum(['root-custom', 'custom'], { error: 'must be "root-custom" or "custom"' }).default('custom'),
    permissions: z
      .array(permissionRequestSchema, { error: 'must be an array of {name, environment} objects' })
      .default([]),
  },
  { error: 'must be a JSON object with name, description, type and permissions' },
);

export type CreateRoleRequest = z.output<typeof createRoleSchema>;

/** The role record of responses (spec 2.7). */
export const roleSchema = z.object({
  id: z.number().int(),
  type: z.string(),
  name: z.string(),
  description: z.string(),
  project: z.string().nullable(),
});

/** `roleWithVersionSchema`: the 200 body of `POST /api/admin/roles`. */
export const roleWithVersionSchema = z.object({ version: z.literal(1), roles: roleSchema });
