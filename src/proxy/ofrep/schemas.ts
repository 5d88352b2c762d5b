import { z } from 'zod';
import { contextSchema } from '../context/schemas';

/**
 * An OFREP evaluation context: the fields of `POST /proxy`'s context, plus OpenFeature's
 * `targetingKey`, which becomes `userId`.
 */
export const ofrepContextSchema = contextSchema.extend({
  targetingKey: z
    .union([z.string(), z.number(), z.boolean()], { error: 'must be a string, number or boolean' })
    .transform((v) => String(v))
    .nullish(),
});

/** Body of both OFREP evaluation endpoints. */
export const ofrepRequestSchema = z.object(
  { context: ofrepContextSchema.nullish() },
  { error: 'request body must be a JSON object' },
);

/** The query a provider adds to a re-fetch that a change notification triggered (accepted, not needed). */
export const ofrepBulkQuerySchema = z.object({
  flagConfigEtag: z.string().optional(),
  flagConfigLastModified: z.string().optional(),
});

const metadataSchema = z.object({
  impressionData: z.boolean().describe('Whether the toggle asks for impression events'),
});

export const ofrepEvaluationSuccessSchema = z.object({
  key: z.string(),
  value: z
    .union([z.boolean(), z.string(), z.number(), z.record(z.string(), z.unknown()), z.array(z.unknown())])
    .optional()
    .describe(
      "Absent when the caller's default applies: the toggle is off (DISABLED) or no variant payload was picked",
    ),
  reason: z.enum(['STATIC', 'TARGETING_MATCH', 'SPLIT', 'DISABLED', 'DEFAULT', 'UNKNOWN']),
  variant: z.string().describe('Name of the evaluated variant (`disabled` when the toggle has none)'),
  metadata: metadataSchema,
});

export const ofrepEvaluationFailureSchema = z.object({
  key: z.string(),
  errorCode: z.enum(['FLAG_NOT_FOUND', 'PARSE_ERROR', 'INVALID_CONTEXT', 'GENERAL']),
  errorDetails: z.string(),
});

export const ofrepEventStreamSchema = z.object({
  type: z.literal('sse'),
  url: z
    .string()
    .optional()
    .describe(
      'Absolute URL of the change stream on the host the request named; carries a stream token derived ' +
        'from the client key. Absent when the request’s Host is not a valid host[:port] (then `endpoint`)',
    ),
  endpoint: z
    .object({
      requestUri: z
        .string()
        .describe('Path and query of the change stream, on the origin of the OFREP base URL'),
    })
    .optional()
    .describe('Given instead of `url` when the request’s Host is missing or not a valid host[:port]'),
  inactivityDelaySec: z.number().int().min(1),
});

export const ofrepBulkSuccessSchema = z.object({
  flags: z.array(z.union([ofrepEvaluationSuccessSchema, ofrepEvaluationFailureSchema])),
  eventStreams: z.array(ofrepEventStreamSchema),
});

export const ofrepBulkFailureSchema = z.object({
  errorCode: z.enum(['PARSE_ERROR', 'INVALID_CONTEXT', 'GENERAL']),
  errorDetails: z.string(),
});

/** The JSON `data` of every change notification. */
export const ofrepChangeEventSchema = z.object({
  type: z.literal('refetchEvaluation'),
  etag: z.string().describe('Validator of the flag definitions now served'),
  lastModified: z.number().int().describe('Unix seconds of the last accepted definitions change'),
});
