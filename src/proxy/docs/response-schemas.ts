import { z } from 'zod';
import type { ErrorBody, ErrorKind } from '../../common/errors/http-errors';
import type { EvaluatedToggle } from '../upstream/feature-repository';

/**
 * Schemas of what the proxy answers. Requests are described by the schemas that validate them
 * (context, client-metrics); responses are built by code, so their schemas live here and are tied
 * to the code's types by the compile-time checks at the end of this file.
 */
export const variantPayloadSchema = z
  .object({
    type: z.string().meta({ description: 'Payload type, e.g. `string` or `json`', example: 'json' }),
    value: z.string().meta({
      description: 'The payload, always a string (a JSON payload is JSON-encoded)',
      example: '{"a":1}',
    }),
  })
  .meta({ description: 'Payload of a variant' });

export const variantSchema = z
  .object({
    name: z
      .string()
      .meta({ description: 'Variant name; `disabled` for the fallback variant', example: 'blue' }),
    enabled: z.boolean().meta({
      description: '`false` only for the fallback variant (the toggle has no variants or is disabled)',
    }),
    payload: variantPayloadSchema.optional(),
  })
  .meta({ description: 'The variant selected for the context' });

export const toggleSchema = z
  .object({
    name: z.string().meta({ description: 'Feature toggle name', example: 'new-checkout' }),
    enabled: z.boolean().meta({ description: 'Whether the toggle is enabled for the context' }),
    impressionData: z.boolean().meta({ description: 'Whether the SDK should emit impression events' }),
    variant: variantSchema,
  })
  .meta({ description: 'One evaluated toggle; strategies and constraints are never returned' });

export const toggleListSchema = z
  .object({ toggles: z.array(toggleSchema) })
  .meta({ description: 'Evaluated toggles, sorted by name (or in request order for `toggles`)' });

const ERROR_KINDS = [
  'ValidationError',
  'AuthenticationRequired',
  'NoAccessError',
  'NotFoundError',
  'NameExistsError',
  'PayloadTooLarge',
  'ContentTypeError',
  'TooManyRequests',
  'InternalError',
  'EndpointDisabled',
  'NotReady',
] as const satisfies readonly ErrorKind[];

export const errorSchema = z
  .object({
    id: z.uuid().meta({ description: 'Identifier of this error instance; logged with the cause' }),
    name: z.enum(ERROR_KINDS).meta({ description: 'Error kind' }),
    message: z.string().meta({ description: 'What went wrong and how to fix it' }),
  })
  .meta({ description: 'Body of every 4xx/5xx response' });

// Compile-time ties between these schemas and what the code sends.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const toggleMatches: Same<z.infer<typeof toggleSchema>, EvaluatedToggle> = true;
const errorMatches: Same<z.infer<typeof errorSchema>, ErrorBody> = true;
const allKinds: Same<(typeof ERROR_KINDS)[number], ErrorKind> = true;
export const RESPONSE_SCHEMAS_MATCH_CODE = toggleMatches && errorMatches && allKinds;
