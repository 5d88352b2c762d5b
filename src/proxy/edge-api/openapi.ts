import type { PathsObject, SecuritySchemeObject } from 'openapi3-ts/oas31';
import type { z } from 'zod';
import { errorResponses } from '../openapi/error-responses';
import { bulkMetricsSchema, validateTokensSchema } from './schemas';

/** The request components of the chain endpoints, from the schemas that validate them. */
export const EDGE_COMPONENT_SCHEMAS: Array<[string, z.ZodType]> = [
  ['EdgeValidateRequest', validateTokensSchema],
  ['EdgeBulkMetrics', bulkMetricsSchema],
];

export const EDGE_SECURITY_SCHEMES: Record<string, SecuritySchemeObject> = {
  clientToken: {
    type: 'apiKey',
    in: 'header',
    name: 'Authorization',
    description:
      'An Unleash client (backend) token: an upstream token, a server-side SDK token, or one the upstream confirms',
  },
};

/** The OpenAPI paths another instance (ours or an Unleash Edge) uses with this one as its upstream. */
export function edgePaths(): PathsObject {
  return {
    '/edge/validate': {
      post: {
        operationId: 'postEdgeValidate',
        tags: ['Client SDKs'],
        summary: 'Which of these tokens this instance serves (for an instance below it)',
        security: [],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/EdgeValidateRequest' } } },
        },
        responses: {
          '200': {
            description: 'The confirmed tokens with type, environment, projects and `status: "Validated"`',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: {
                    tokens: {
                      type: 'array',
                      items: {
                        type: 'object',
                        required: ['token', 'type', 'environment', 'projects', 'status'],
                        properties: {
                          token: { type: 'string' },
                          type: { type: 'string', enum: ['frontend', 'client'] },
                          environment: { type: 'string' },
                          projects: { type: 'array', items: { type: 'string' } },
                          status: { const: 'Validated' },
                        },
                      },
                    },
                  },
                },
              },
            },
          },
          ...errorResponses(
            'ValidationError',
            'PayloadTooLarge',
            'ContentTypeError',
            'TooManyRequests',
            'NotReady',
          ),
        },
      },
    },
    '/api/client/metrics/bulk': {
      post: {
        operationId: 'postClientMetricsBulk',
        tags: ['Client SDKs'],
        summary: 'Usage of a downstream instance (Unleash Edge’s bulk form), forwarded upstream',
        security: [{ clientToken: [] }],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/EdgeBulkMetrics' } } },
        },
        responses: {
          '202': { description: 'Accepted; forwarded at the metrics interval' },
          ...errorResponses(
            'ValidationError',
            'AuthenticationRequired',
            'PayloadTooLarge',
            'ContentTypeError',
            'NotReady',
          ),
        },
      },
    },
  };
}
