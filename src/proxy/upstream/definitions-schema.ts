import { z } from 'zod';

/**
 * The shape of the client API's feature definitions that evaluation relies on. Anything the upstream
 * sends that does not fit is refused as a whole, and the last good definitions stay in use.
 */
const constraint = z.looseObject({
  contextName: z.string(),
  operator: z.string(),
  values: z.array(z.string()).optional(),
  value: z.string().optional(),
  inverted: z.boolean().optional(),
  caseInsensitive: z.boolean().optional(),
});

const payload = z.looseObject({ type: z.string(), value: z.string() });

const variant = z.looseObject({
  name: z.string(),
  weight: z.number(),
  stickiness: z.string().optional(),
  payload: payload.optional(),
});

const strategy = z.looseObject({
  name: z.string(),
  parameters: z.record(z.string(), z.unknown()).optional().nullable(),
  constraints: z.array(constraint).optional().nullable(),
  segments: z.array(z.number()).optional().nullable(),
  variants: z.array(variant).optional().nullable(),
});

export const featureSchema = z.looseObject({
  name: z.string().min(1),
  enabled: z.boolean(),
  project: z.string().optional(),
  impressionData: z.boolean().optional().nullable(),
  strategies: z.array(strategy),
  variants: z.array(variant).optional().nullable(),
});

export const segmentSchema = z.looseObject({ id: z.number(), constraints: z.array(constraint) });

export const clientFeaturesSchema = z.looseObject({
  version: z.number().optional(),
  features: z.array(featureSchema),
  segments: z.array(segmentSchema).optional(),
});

/** Describes the first problem of a payload in one short line. */
export function describeProblem(error: z.ZodError): string {
  const issue = error.issues[0];
  const where = issue.path.length > 0 ? issue.path.join('.') : 'response';
  return `${where}: ${issue.message}`;
}
