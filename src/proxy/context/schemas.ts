import { z } from 'zod';

/** A context value as clients send it: numbers and booleans are turned into strings. */
const scalar = z
  .union([z.string(), z.number(), z.boolean()], {
    error: 'must be a string, number or boolean',
  })
  .transform((v) => String(v));

const optionalScalar = scalar.nullish();

/** The `context` object of POST bodies (DESIGN "Context"). Unknown root fields become properties. */
export const contextSchema = z
  .object(
    {
      appName: optionalScalar,
      environment: optionalScalar,
      userId: optionalScalar,
      sessionId: optionalScalar,
      currentTime: optionalScalar,
      remoteAddress: z.unknown().optional(),
      properties: z
        .record(z.string(), scalar.nullable(), { error: 'must be an object of string values' })
        .nullish(),
    },
    { error: 'must be an object' },
  )
  .catchall(optionalScalar);

export const proxyBodySchema = z.object(
  {
    context: contextSchema.nullish(),
    toggles: z
      .array(z.string({ error: 'must be a toggle name (string)' }), {
        error: 'must be an array of toggle names',
      })
      .optional(),
  },
  { error: 'request body must be a JSON object' },
);

/**
 * `proxyBodySchema` without its context, which `contextFromBody` checks (limits first, then
 * `contextSchema`): validating it here too would run the schema twice on the largest part.
 */
export const proxyBodyEnvelopeSchema = proxyBodySchema.extend({ context: z.unknown().optional() });

export type ProxyBody = z.infer<typeof proxyBodySchema>;
export type ClientContext = z.infer<typeof contextSchema>;

/** One line naming the offending field, for the 400 message. */
export function describeIssues(error: z.ZodError, root = ''): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => {
      const path = [root, ...issue.path.map(String)].filter((p) => p !== '').join('.');
      return path ? `${path} ${issue.message}` : issue.message;
    })
    .join('; ');
}
