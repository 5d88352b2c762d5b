import type { ReferenceObject, ResponseObject } from 'openapi3-ts/oas31';
import type { ErrorKind } from '../../common/errors/http-errors';

/** Status and meaning of every error kind, as the error middleware sends them (DESIGN "Errors"). */
export const ERROR_RESPONSES: Record<ErrorKind, { status: number; description: string }> = {
  ValidationError: { status: 400, description: 'The request is malformed; the message names the field' },
  AuthenticationRequired: { status: 401, description: 'The key or token is missing or not accepted' },
  NoAccessError: { status: 403, description: 'The credentials lack the needed permission' },
  NotFoundError: { status: 404, description: 'No such endpoint' },
  NameExistsError: { status: 409, description: 'Conflicts with an existing resource' },
  PayloadTooLarge: { status: 413, description: 'The request body is larger than maxBodySize' },
  ContentTypeError: { status: 415, description: 'The request body is not application/json' },
  TooManyRequests: {
    status: 429,
    description: 'The caller is past its budget; retry after `Retry-After` seconds',
  },
  InternalError: { status: 500, description: 'Unexpected failure; the error id is logged with the cause' },
  EndpointDisabled: { status: 501, description: 'The endpoint is switched off in the configuration' },
  NotReady: {
    status: 503,
    description: 'The proxy has not yet synchronised flag definitions with the upstream',
  },
};

/** Name of the shared response component of one error kind. */
export const errorComponentName = (kind: ErrorKind): string => `Error${ERROR_RESPONSES[kind].status}${kind}`;

/** The `components.responses` entries: one per error kind, each with the standard error body. */
export function errorResponseComponents(errorSchemaRef: string): Record<string, ResponseObject> {
  const components: Record<string, ResponseObject> = {};
  for (const [kind, { description }] of Object.entries(ERROR_RESPONSES) as Array<
    [ErrorKind, { status: number; description: string }]
  >) {
    components[errorComponentName(kind)] = {
      description,
      ...(kind === 'NotReady' || kind === 'TooManyRequests'
        ? { headers: { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } } } }
        : {}),
      content: { 'application/json': { schema: { $ref: errorSchemaRef } } },
    };
  }
  return components;
}

/**
 * The standard error responses of one endpoint: `errorResponses('ValidationError', 'NotReady')`
 * gives `{ '400': {$ref}, '503': {$ref} }`. Every 500 is added, since any endpoint can fail.
 */
export function errorResponses(...kinds: ErrorKind[]): Record<string, ReferenceObject> {
  const responses: Record<string, ReferenceObject> = {};
  for (const kind of [...kinds, 'InternalError' as const]) {
    responses[String(ERROR_RESPONSES[kind].status)] = {
      $ref: `#/components/responses/${errorComponentName(kind)}`,
    };
  }
  return responses;
}
