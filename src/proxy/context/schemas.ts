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

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * True when `contextSchema` (and OFREP's, which adds `targetingKey`) would accept `raw` and give
 * its fields back as they are: an object whose every field is a string or null (`remoteAddress`
 * anything), with `properties` absent, null or an object of strings and nulls. That is what
 * clients send, and then the schema's run (~5 µs) is skipped; anything else goes through the schema,
 * which converts numbers and booleans and names what is wrong. `test/proxy/context/fast-accept.test.ts`
 * checks on random input that whatever this accepts the schemas accept with the same result.
 */
export function isPlainContext(raw: unknown): raw is Readonly<Record<string, unknown>> {
  if (!isRecord(raw)) return false;
  for (const name of Object.keys(raw)) {
    if (name === 'remoteAddress') continue;
    const value = raw[name];
    if (value === null || value === undefined) continue;
    if (name !== 'properties') {
      if (typeof value !== 'string') return false;
      continue;
    }
    if (!isRecord(value)) return false;
    for (const prop of Object.keys(value)) {
      const v = value[prop];
      if (v !== null && typeof v !== 'string') return false;
    }
  }
  return true;
}

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
