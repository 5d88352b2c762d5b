import type { z } from 'zod';
import { ValidationError } from '../../common/errors/http-errors';

/**
 * At most this many problems are named in the answer to a request: a body of thousands of wrong
 * elements costs one short answer, not an answer larger than the body.
 */
export const MAX_ISSUES_NAMED = 10;

/**
 * `features[2].strategies[0].value: message` for each problem, joined with `; `; beyond `limit`
 * problems, `; … and N more problems`.
 */
export function describeIssues(error: z.ZodError, root = '', limit = Infinity): string {
  const { issues } = error;
  const named = issues
    .slice(0, limit)
    .map((issue) => {
      const where = issue.path.reduce<string>(
        (acc, part) =>
          typeof part === 'number' ? `${acc}[${part}]` : acc === '' ? String(part) : `${acc}.${String(part)}`,
        root,
      );
      return where === '' ? issue.message : `${where}: ${issue.message}`;
    })
    .join('; ');
  const more = issues.length - limit;
  return more > 0 ? `${named}; … and ${more} more problem${more === 1 ? '' : 's'}` : named;
}

/**
 * Parses a request payload with its schema; a mismatch is a 400 ValidationError naming the fields (the
 * first MAX_ISSUES_NAMED problems).
 */
export function parsePayload<S extends z.ZodType>(
  schema: S,
  payload: unknown,
  what = 'Request body',
): z.output<S> {
  const result = schema.safeParse(payload);
  if (!result.success) {
    throw new ValidationError(`${what} is not valid: ${describeIssues(result.error, '', MAX_ISSUES_NAMED)}`);
  }
  return result.data;
}
