import type {
  OperationObject,
  PathsObject,
  ResponseObject,
  SecurityRequirementObject,
  SecuritySchemeObject,
} from 'openapi3-ts/oas31';
import type { z } from 'zod';
import { errorResponses } from '../openapi/error-responses';
import { varyHeader } from '../openapi/response-headers';
import { INACTIVITY_DELAY_SEC, STREAM_PATH } from './bulk-answer';
import {
  ofrepBulkFailureSchema,
  ofrepBulkSuccessSchema,
  ofrepChangeEventSchema,
  ofrepContextSchema,
  ofrepEvaluationFailureSchema,
  ofrepEvaluationSuccessSchema,
  ofrepEventStreamSchema,
  ofrepRequestSchema,
} from './schemas';

/** The OFREP components of the OpenAPI document, from the schemas the router validates and answers with. */
export const OFREP_COMPONENT_SCHEMAS: Array<[string, z.ZodType]> = [
  ['OfrepContext', ofrepContextSchema],
  ['OfrepRequest', ofrepRequestSchema],
  ['OfrepEvaluationSuccess', ofrepEvaluationSuccessSchema],
  ['OfrepEvaluationFailure', ofrepEvaluationFailureSchema],
  ['OfrepBulkSuccess', ofrepBulkSuccessSchema],
  ['OfrepBulkFailure', ofrepBulkFailureSchema],
  ['OfrepEventStream', ofrepEventStreamSchema],
  ['OfrepChangeEvent', ofrepChangeEventSchema],
];

export const OFREP_SECURITY_SCHEMES: Record<string, SecuritySchemeObject> = {
  ofrepBearer: {
    type: 'http',
    scheme: 'bearer',
    description: 'A client key as `Authorization: Bearer <key>`',
  },
  ofrepApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'A client key' },
  streamToken: {
    type: 'apiKey',
    in: 'query',
    name: 'token',
    description: 'The stream token of a client key, as the `eventStreams` URL of a bulk answer carries it',
  },
};

const ofrepSecurity: SecurityRequirementObject[] = [
  { clientKey: [] },
  { ofrepBearer: [] },
  { ofrepApiKey: [] },
];
const json = (id: string) => ({ 'application/json': { schema: { $ref: `#/components/schemas/${id}` } } });
const noBody = (description: string): ResponseObject => ({ description });

function evaluation(bulk: boolean, vary: string): OperationObject {
  const failure = bulk ? 'OfrepBulkFailure' : 'OfrepEvaluationFailure';
  return {
    operationId: bulk ? 'ofrepEvaluateFlags' : 'ofrepEvaluateFlag',
    tags: ['OpenFeature (OFREP)'],
    summary: bulk
      ? 'OFREP bulk evaluation: every toggle for a context'
      : 'OFREP evaluation of one flag for a context',
    description:
      'Same evaluation as `/proxy`. `targetingKey` is the `userId`; the other context fields are as for ' +
      '`POST /proxy`. A flag is typed by its variant payloads (string/csv, number, json), otherwise boolean ' +
      '(`enabled`). Reasons: DISABLED (no value: the caller’s default applies), DEFAULT (no strategy ' +
      'matched), STATIC, TARGETING_MATCH or SPLIT from the deciding strategy.' +
      (bulk
        ? ` The answer announces the change stream in \`eventStreams\` (inactivityDelaySec ${INACTIVITY_DELAY_SEC}).`
        : ''),
    security: ofrepSecurity,
    parameters: bulk
      ? [
          { name: 'If-None-Match', in: 'header', required: false, schema: { type: 'string' } },
          {
            name: 'flagConfigEtag',
            in: 'query',
            required: false,
            description: 'Sent by providers on a re-fetch a change event triggered; accepted and not needed',
            schema: { type: 'string' },
          },
          {
            name: 'flagConfigLastModified',
            in: 'query',
            required: false,
            description: 'Sent by providers on a re-fetch a change event triggered; accepted and not needed',
            schema: { type: 'string' },
          },
        ]
      : [{ name: 'key', in: 'path', required: true, schema: { type: 'string' } }],
    requestBody: { required: false, content: json('OfrepRequest') },
    responses: {
      ...errorResponses('PayloadTooLarge', 'ContentTypeError', 'NotReady'),
      '200': bulk
        ? {
            description: 'Every toggle, sorted by key',
            headers: {
              ETag: { description: 'Weak validator of the flags', schema: { type: 'string' } },
              Vary: varyHeader(vary),
            },
            content: json('OfrepBulkSuccess'),
          }
        : {
            description: 'The evaluated flag',
            headers: { Vary: varyHeader(vary) },
            content: json('OfrepEvaluationSuccess'),
          },
      ...(bulk
        ? { '304': { ...noBody('Not modified: If-None-Match matches'), headers: { Vary: varyHeader(vary) } } }
        : {}),
      '400': { description: 'PARSE_ERROR (body) or INVALID_CONTEXT (context)', content: json(failure) },
      '401': noBody('Missing or invalid client key (no body)'),
      '403': noBody('A server-side SDK token, which cannot evaluate (no body)'),
      ...(bulk
        ? {}
        : {
            '404': { description: 'FLAG_NOT_FOUND', content: json('OfrepEvaluationFailure') },
            '500': {
              description: 'The flag’s payload does not parse (PARSE_ERROR) or a strategy threw (GENERAL)',
              content: json('OfrepEvaluationFailure'),
            },
          }),
    },
  };
}

/** The OFREP paths, relative to the document's server (the base path). */
export function ofrepPaths(vary: string): PathsObject {
  return {
    '/ofrep/v1/evaluate/flags/{key}': { post: evaluation(false, vary) },
    '/ofrep/v1/evaluate/flags': { post: evaluation(true, vary) },
    [`/ofrep${STREAM_PATH}`]: {
      get: {
        operationId: 'ofrepFlagChanges',
        tags: ['OpenFeature (OFREP)'],
        summary: 'Change notifications (Server-Sent Events) for OFREP providers',
        description:
          'The URL comes from `eventStreams` of a bulk answer. Sends `{"type":"refetchEvaluation","etag","lastModified"}` ' +
          'with an `id` whenever the definitions change (at once when `Last-Event-ID` or `since` names older ' +
          'definitions), and a comment heartbeat. A client that does not read is disconnected.',
        security: [{ streamToken: [] }, ...ofrepSecurity],
        parameters: [
          {
            name: 'since',
            in: 'query',
            required: false,
            description: 'Event id of the definitions the client has',
            schema: { type: 'string' },
          },
          { name: 'Last-Event-ID', in: 'header', required: false, schema: { type: 'string' } },
        ],
        responses: {
          '200': {
            description: 'An event stream; the data of each event is an OfrepChangeEvent',
            content: { 'text/event-stream': { schema: { $ref: '#/components/schemas/OfrepChangeEvent' } } },
          },
          '401': noBody('Missing or invalid token or client key (no body)'),
          '403': noBody('A server-side SDK token (no body)'),
          ...errorResponses('NotReady'),
        },
      },
    },
  };
}
