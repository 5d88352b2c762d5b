import type { z } from 'zod';
import { ValidationError } from '../../common/errors/http-errors';

/** `features[2].strategies[0].value: message` for each problem, joined with `; `. */
export function describeIssues(error: z.ZodError, root = ''): string {
  return error.issues
    .map((issue) => {
      const where = issue.path.reduce<string>(
        (acc, part) =>
          typeof part === 'number' ? `${acc}[${part}]` : acc === '' ? String(part) : `${acc}.${String(part)}`,
        root,
      );
      return where === '' ? issue.message : `${where}: ${issue.message}`;
    })
    .join('; ');
}

/** Parses a request payload with its schema; a mismatch is a 400 ValidationError naming the fields. */
export function parsePayload<S extends z.ZodType>(
  schema: S,
  payload: unknown,
  what = 'Request body',
): z.output<S> {
  const result = schema.safeParse(payload);
  if (!result.success) throw new ValidationError(`${what} is not valid: ${describeIssues(result.error)}`);
  return result.data;
}
