import { z } from 'zod';
import { storedText } from '../http/stored-text';

const PROJECT = /^(\*|[A-Za-z0-9][A-Za-z0-9_.-]{0,99})$/;
const project = z.string().regex(PROJECT, 'must be "*" or a project name (letters, digits, _ . -)');

/**
 * `POST /api/admin/api-tokens`, as Unleash's API takes it: `type` `client` (or its older name
 * `backend`) or `frontend`, any case; `environment`; `projects` (default `["*"]`) or one `project`;
 * optional `tokenName`. Unknown fields are ignored.
 */
export const createApiTokenSchema = z
  .object(
    {
      type: z
        .string({ error: 'must be "client", "backend" or "frontend"' })
        .transform((t) => t.toLowerCase())
        .pipe(
          z.enum(['client', 'backend', 'frontend'], { error: 'must be "client", "backend" or "frontend"' }),
        )
        .transform((t) => (t === 'backend' ? 'client' : t)),
      environment: storedText('must be one of the configured environments').min(1),
      projects: z.array(project, { error: 'must be an array of project names' }).min(1).optional(),
      project: project.optional(),
      tokenName: storedText().max(200).optional(),
    },
    { error: 'must be a JSON object with type, environment and projects' },
  )
  .transform(({ projects, project: one, ...rest }) => {
    const list = projects ?? (one === undefined ? ['*'] : [one]);
    return { ...rest, projects: list.includes('*') ? ['*'] : [...new Set(list)] };
  });
