import type { z } from 'zod';
import { ValidationError } from '../../common/errors/http-errors';
import { checkContextInput, normalise } from '../context/build-context';
import { copyFields } from '../context/copy-fields';
import type { ContextLimits } from '../context/limits';
import { describeIssues, isPlainContext } from '../context/schemas';
import type { EvaluationInput } from '../evaluation/pipeline';
import { ofrepRequestSchema } from './schemas';

/** An error answered in OFREP's own shape: `{errorCode, errorDetails}`, with `key` for one flag. */
export class OfrepError extends Error {
  constructor(
    readonly status: number,
    readonly body: { key?: string; errorCode: string; errorDetails: string },
  ) {
    super(body.errorDetails);
  }
}

/** 400 in OFREP's words: problems inside `context` are INVALID_CONTEXT, the rest PARSE_ERROR. */
function badRequest(error: z.ZodError, key: string | undefined): OfrepError {
  const inContext = error.issues.some((issue) => issue.path[0] === 'context');
  return new OfrepError(400, {
    ...(key === undefined ? {} : { key }),
    errorCode: inContext ? 'INVALID_CONTEXT' : 'PARSE_ERROR',
    errorDetails: `Invalid request body: ${describeIssues(error)}`,
  });
}

function invalidContext(message: string, key: string | undefined): OfrepError {
  return new OfrepError(400, {
    ...(key === undefined ? {} : { key }),
    errorCode: 'INVALID_CONTEXT',
    errorDetails: `Invalid request body: ${message}`,
  });
}

/** A body `ofrepRequestSchema` accepts as it is: an object (or none) whose context is plain or absent. */
function isPlainBody(
  body: unknown,
  context: unknown,
): context is Readonly<Record<string, unknown>> | undefined | null {
  if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body))) return false;
  return context === undefined || context === null || isPlainContext(context);
}

/**
 * The evaluation input of an OFREP request from its parsed JSON body (both evaluation endpoints):
 * the context within the limits, OpenFeature's `targetingKey` as the user. Throws an `OfrepError`
 * (400) for a body or context the endpoints refuse; `key` is the flag of a single evaluation.
 */
export function ofrepInput(body: unknown, limits: ContextLimits, key?: string): EvaluationInput {
  const rawContext = (body as { context?: unknown } | undefined)?.context;
  try {
    checkContextInput(rawContext, limits);
  } catch (err) {
    if (err instanceof ValidationError) throw invalidContext(err.message, key);
    throw err;
  }
  // what clients send is taken as it is (`isPlainContext`); anything else through the schema
  let given: Readonly<Record<string, unknown>>;
  if (isPlainBody(body, rawContext)) given = rawContext ?? {};
  else {
    const parsed = ofrepRequestSchema.safeParse(body ?? {});
    if (!parsed.success) throw badRequest(parsed.error, key);
    given = parsed.data.context ?? {};
  }
  // `{ ...rest, userId: targetingKey }` without `targetingKey` (`copy-fields.ts` says why not spreads):
  // OpenFeature's targetingKey is the user, it wins over a `userId` sent beside it.
  const input = copyFields<Record<string, unknown>>({}, given, 'targetingKey');
  const { targetingKey } = given;
  if (targetingKey !== undefined && targetingKey !== null) input.userId = targetingKey;
  const clientContext = normalise(input);
  return { clientContext, toggles: undefined };
}
