import { z } from 'zod';
import { storedText } from '../http/stored-text';
import { roleNameVisible } from './name-key';

/**
 * What a role name may not contain: control characters (Cc), format characters (Cf: zero-width
 * spaces and joiners, bidi marks, embeddings, overrides and isolates, the BOM), lone surrogates (Cs),
 * and line and paragraph separators (Zl, Zp). With them, a name could look exactly like another
 * (`"Admin\u200B"` beside `Admin`) or reorder the text around it.
 */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}]/u;

const codePoint = (s: string) => `U+${(s.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;

/** Every field is stored: a NUL is refused before any query (see stored-text.ts). */
const text = (what: string) => storedText(`${what} must be a string`);

/**
 * A role name: trimmed, 1..100 characters, none of them a control or format character, and not made
 * only of characters that show nothing (Hangul fillers U+3164, U+115F, U+1160, U+FFA0, variation
 * selectors and other default-ignorable code points, blanks, the braille blank U+2800).
 */
const roleName = text('name')
  .trim()
  .min(1, 'must be a non-empty string')
  .max(100, 'must be at most 100 characters')
  .superRefine((s, ctx) => {
    const found = INVISIBLE.exec(s);
    if (found) {
      ctx.addIssue({
        code: 'custom',
        message: `must not contain control, format, zero-width or bidi characters (found ${codePoint(found[0])} at position ${found.index})`,
      });
    } else if (roleNameVisible(s) === '') {
      ctx.addIssue({
        code: 'custom',
        message: `must contain a visible character (got only invisible, filler or blank characters: ${[...new Set(s)].map(codePoint).join(' ')})`,
      });
    }
  });

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
    name: roleName,
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
