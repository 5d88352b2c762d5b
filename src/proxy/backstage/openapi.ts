import type { OperationObject, PathsObject, SchemaObject } from 'openapi3-ts/oas31';
import { errorResponses } from '../openapi/error-responses';
import type { BackstageSwitches } from './backstage-answers';

const json = (description: string, schema: SchemaObject) => ({
  description,
  content: { 'application/json': { schema } },
});

const keyless = (operationId: string, summary: string, responses: OperationObject['responses']) => ({
  get: { operationId, tags: ['Operations'], summary, security: [], responses },
});

const listedToken: SchemaObject = {
  type: 'object',
  required: ['token', 'type', 'environment', 'projects', 'status'],
  properties: {
    token: {
      type: 'string',
      description: 'Anonymised alike whatever the length: `project:environment.****`, or `****`',
    },
    type: { type: 'string', enum: ['frontend', 'client'] },
    environment: { type: ['string', 'null'] },
    projects: { type: 'array', items: { type: 'string' } },
    status: { type: 'string', enum: ['Trusted', 'Validated'] },
  },
};

/** The OpenAPI paths of Unleash Edge's internal backstage, as far as its switches serve it. */
export function backstagePaths(switches: Partial<BackstageSwitches>): PathsObject {
  const paths: PathsObject = {
    '/internal-backstage/health': keyless('getBackstageHealth', 'Liveness: OK whenever the process serves', {
      '200': json('Alive', { type: 'object', properties: { status: { const: 'OK' } } }),
      ...errorResponses(),
    }),
    '/internal-backstage/ready': keyless(
      'getBackstageReady',
      'Readiness: READY once any environment holds flag definitions',
      {
        '200': json('Ready', { type: 'object', properties: { status: { const: 'READY' } } }),
        '503': json('Not ready yet (Unleash Edge’s body)', {
          type: 'object',
          properties: { error: { type: 'string' }, status: { const: 'NOT_READY' } },
        }),
        ...errorResponses(),
      },
    ),
  };
  if (!switches.disableMetricsEndpoint)
    paths['/internal-backstage/metrics'] = keyless(
      'getBackstageMetrics',
      'Prometheus metrics, without a key',
      {
        '200': {
          description: 'Prometheus text exposition format',
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
        ...errorResponses(),
      },
    );
  if (!switches.disableTokensEndpoint)
    paths['/internal-backstage/tokens'] = keyless('getBackstageTokens', 'Known tokens, secrets anonymised', {
      '200': json('Unleash Edge’s TokenInfo', {
        type: 'object',
        properties: {
          tokenRefreshes: { type: 'array', items: { type: 'object', properties: { token: listedToken } } },
          tokenValidationStatus: { type: 'array', items: listedToken },
          invalidTokenCount: { type: 'integer' },
        },
      }),
      ...errorResponses(),
    });
  if (!switches.disableMetricsBatchEndpoint)
    paths['/internal-backstage/metricsbatch'] = keyless(
      'getBackstageMetricsBatch',
      'Client usage waiting to be forwarded: app names and counts',
      {
        '200': json('Pending applications and usage', {
          type: 'object',
          properties: {
            applications: { type: 'array', items: { type: 'object' } },
            metrics: { type: 'array', items: { type: 'object' } },
          },
        }),
        ...errorResponses(),
      },
    );
  if (!switches.disableStatusEndpoint) {
    paths['/internal-backstage/status'] = keyless(
      'getBackstageStatusPage',
      'The status page (HTML; its script, styles and uPlot under status/, all with a strict CSP)',
      {
        '200': { description: 'The page', content: { 'text/html': { schema: { type: 'string' } } } },
        ...errorResponses(),
      },
    );
    paths['/internal-backstage/status.json'] = keyless(
      'getBackstageStatus',
      "The status page's data: process, environments (tokens anonymised), requests, 15 minutes of plots",
      {
        '200': json('Status (rendered at most once a second)', {
          type: 'object',
          required: ['generatedAt', 'process', 'environments', 'requests', 'plots'],
          properties: {
            generatedAt: { type: 'integer', description: 'Epoch ms' },
            process: { type: 'object' },
            environments: { type: 'array', items: { type: 'object' } },
            requests: { type: 'array', items: { type: 'object' } },
            plots: { type: 'object' },
          },
        }),
        ...errorResponses(),
      },
    );
  }
  if (!switches.disableFeaturesEndpoint)
    paths['/internal-backstage/features'] = {
      get: {
        operationId: 'getBackstageFeatures',
        tags: ['Operations'],
        summary: 'The definitions a client token may read, by environment',
        security: [{ clientToken: [] }],
        responses: {
          '200': json('Client features of the token’s environment, limited to its projects', {
            type: 'object',
            additionalProperties: { $ref: '#/components/schemas/ClientFeatures' },
          }),
          ...errorResponses('AuthenticationRequired', 'NoAccessError', 'NotReady'),
        },
      },
    };
  return paths;
}
