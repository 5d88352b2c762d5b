import {
  OpenApiBuilder,
  type HeadersObject,
  type OpenAPIObject,
  type OperationObject,
  type ParameterObject,
  type PathItemObject,
  type ResponseObject,
  type SchemaObject,
} from 'openapi3-ts/oas31';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { packageRoot } from '../../common/files/package-root';
import { clientMetricsSchema, clientRegistrationSchema } from '../client-metrics/schemas';
import type { ProxyConfig } from '../config/types';
import { ROOT_FIELDS } from '../context/build-context';
import { contextSchema, proxyBodySchema } from '../context/schemas';
import { backstagePaths } from '../backstage/openapi';
import type { BackstageSwitches } from '../backstage/backstage-answers';
import { EDGE_COMPONENT_SCHEMAS, EDGE_SECURITY_SCHEMES, edgePaths } from '../edge-api/openapi';
import { OFREP_COMPONENT_SCHEMAS, OFREP_SECURITY_SCHEMES, ofrepPaths } from '../ofrep/openapi';
import { varyHeader } from '../openapi/response-headers';
import { clientFeaturesSchema } from '../upstream/definitions-schema';
import { errorResponseComponents, errorResponses } from '../openapi/error-responses';
import {
  errorSchema,
  toggleListSchema,
  toggleSchema,
  variantPayloadSchema,
  variantSchema,
} from './response-schemas';

/** The version in package.json, read once. */
function packageVersion(): string {
  try {
    const file = path.join(packageRoot(), 'package.json');
    const version = (JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version;
    return typeof version === 'string' ? version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/** The zod schemas of the document, by component name. Requests use the schemas that validate them. */
const COMPONENT_SCHEMAS: Array<[string, z.ZodType]> = [
  ['Context', contextSchema],
  ['ProxyRequest', proxyBodySchema],
  ['ToggleList', toggleListSchema],
  ['Toggle', toggleSchema],
  ['Variant', variantSchema],
  ['VariantPayload', variantPayloadSchema],
  ['Error', errorSchema],
  ['ClientMetrics', clientMetricsSchema],
  ['ClientRegistration', clientRegistrationSchema],
  ['ClientFeatures', clientFeaturesSchema],
  ...OFREP_COMPONENT_SCHEMAS,
  ...EDGE_COMPONENT_SCHEMAS,
];

const CONTEXT_FIELDS: Record<(typeof ROOT_FIELDS)[number], string> = {
  appName: 'Name of the client application',
  environment: 'Environment; the configured `environment` option wins over this value',
  userId: 'Identifier of the user',
  sessionId: 'Identifier of the session',
  currentTime: 'Evaluation time (ISO 8601); defaults to now',
};

/** JSON Schema 2020-12 of every component, as OpenAPI 3.1 takes it. */
function componentSchemas(): Record<string, SchemaObject> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of COMPONENT_SCHEMAS) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    io: 'input',
    target: 'draft-2020-12',
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  });
  const result: Record<string, SchemaObject> = {};
  for (const [id, schema] of Object.entries(schemas)) {
    const component: Record<string, unknown> = { ...schema };
    delete component.$schema; // the document's dialect applies
    delete component.$id;
    result[id] = component as SchemaObject;
  }
  const context = result.Context;
  context.description =
    'Evaluation context. Root fields other than the ones listed, and every entry of `properties`, are ' +
    'custom properties that constraints can use; numbers and booleans are turned into strings. ' +
    '`remoteAddress` is always set by the proxy from the connection and ignored when sent.';
  for (const [field, description] of Object.entries(CONTEXT_FIELDS)) {
    const property = context.properties?.[field];
    if (property && !('$ref' in property)) property.description = description;
  }
  return result;
}

const jsonContent = (schemaId: string) => ({ 'application/json': { schema: ref(schemaId) } });

const togglesOk = (description: string, vary: string): Record<string, ResponseObject> => {
  const headers: HeadersObject = {
    ETag: {
      description: 'Weak validator of the body; send it back as If-None-Match',
      schema: { type: 'string' },
    },
    'Cache-Control': { description: '`public, max-age=2`', schema: { type: 'string' } },
    Vary: varyHeader(vary),
  };
  return {
    '200': { description, headers, content: jsonContent('ToggleList') },
    '304': { description: 'Not modified: the If-None-Match value matches the current answer', headers },
  };
};

/** GET context parameters: the root fields, plus `properties[name]=value` (any other name is a property too). */
function contextQueryParameters(): ParameterObject[] {
  return [
    ...ROOT_FIELDS.map((name): ParameterObject => ({
      name,
      in: 'query',
      required: false,
      description: CONTEXT_FIELDS[name],
      schema: { type: 'string' },
    })),
    {
      name: 'properties',
      in: 'query',
      required: false,
      style: 'deepObject',
      explode: true,
      description:
        'Custom context properties as `properties[name]=value`; any other query parameter is a property too. A parameter given twice is a 400.',
      schema: { type: 'object', additionalProperties: { type: 'string' } },
    },
    {
      name: 'If-None-Match',
      in: 'header',
      required: false,
      description: 'ETag of an earlier answer; a match gives 304',
      schema: { type: 'string' },
    },
  ];
}

const proxyBody = {
  required: false,
  description:
    'With `toggles`, every listed toggle is answered in request order (also when disabled or unknown); without it, the enabled toggles.',
  content: jsonContent('ProxyRequest'),
};

function evaluationOperations(
  allEndpoint: boolean,
  vary: string,
): { get: OperationObject; post: OperationObject } {
  const suffix = allEndpoint ? 'All' : '';
  const what = allEndpoint ? 'enabled and disabled toggles' : 'the toggles enabled';
  const disabled = allEndpoint ? (['EndpointDisabled'] as const) : [];
  const note = allEndpoint
    ? " Available with `enableAllEndpoint` / `ENABLE_ALL_ENDPOINT=true` (on by default under Unleash Edge's names) unless `DISABLE_ALL_ENDPOINT=true`, otherwise 501."
    : '';
  return {
    get: {
      operationId: `getToggles${suffix}`,
      tags: ['Evaluation'],
      summary: `Evaluate ${what} for a context given as query parameters`,
      description: `Returns ${what} for the context.${note}`,
      parameters: contextQueryParameters(),
      responses: {
        ...togglesOk(`The ${what}, sorted by name`, vary),
        ...errorResponses('ValidationError', 'AuthenticationRequired', ...disabled, 'NotReady'),
      },
    },
    post: {
      operationId: `postToggles${suffix}`,
      tags: ['Evaluation'],
      summary: `Evaluate ${what} (or the listed toggles) for a context given in the body`,
      description: `Returns ${what} for \`context\`, or with \`toggles\` exactly the listed toggles.${note}`,
      requestBody: proxyBody,
      responses: {
        ...togglesOk('The evaluated toggles', vary),
        ...errorResponses(
          'ValidationError',
          'AuthenticationRequired',
          'PayloadTooLarge',
          'ContentTypeError',
          ...disabled,
          'NotReady',
        ),
      },
    },
  };
}

const accepted: Record<string, ResponseObject> = { '202': { description: 'Accepted' } };

/** A POST of a client SDK (metrics, registration): JSON body, 202, the standard errors. */
function clientSdkPost(
  operationId: string,
  summary: string,
  schema: string,
  description?: string,
): OperationObject {
  return {
    operationId,
    tags: ['Client SDKs'],
    summary,
    ...(description ? { description } : {}),
    security: [{ clientKey: [] }, { serverSideToken: [] }],
    requestBody: { required: true, content: jsonContent(schema) },
    responses: {
      ...accepted,
      ...errorResponses(
        'ValidationError',
        'AuthenticationRequired',
        'PayloadTooLarge',
        'ContentTypeError',
        'NotReady',
      ),
    },
  };
}

function metricsOperation(operationId: string, alias: boolean): OperationObject {
  return clientSdkPost(
    operationId,
    alias ? 'Alias of POST /proxy/client/metrics' : 'Post usage metrics of a client SDK',
    'ClientMetrics',
    'Counts are aggregated per app and forwarded to the upstream at `metricsInterval` under the client’s own `appName`. An invalid payload is a 400 and is not forwarded.',
  );
}

/** `GET /proxy/client/features`: definitions for server-side SDKs and other proxies. */
function clientFeaturesPath(vary: string): PathItemObject {
  return {
    get: {
      operationId: 'getClientFeatures',
      tags: ['Client SDKs'],
      summary: 'Feature definitions for server-side SDKs and other proxies (experimental)',
      description:
        'The client API’s definitions, for tokens in `expServerSideSdkConfig.tokens`; client keys are refused (401).',
      security: [{ serverSideToken: [] }],
      parameters: [
        {
          name: 'If-None-Match',
          in: 'header',
          required: false,
          description: 'ETag of an earlier answer; a match gives 304',
          schema: { type: 'string' },
        },
      ],
      responses: {
        '200': {
          description: 'Definitions with segments',
          headers: { ETag: { schema: { type: 'string' } }, Vary: varyHeader(vary) },
          content: jsonContent('ClientFeatures'),
        },
        '304': { description: 'Not modified', headers: { Vary: varyHeader(vary) } },
        ...errorResponses('AuthenticationRequired', 'NotReady'),
      },
    },
  };
}

/**
 * The same operations under another path (Unleash's frontend API, Unleash Edge's paths): operation
 * ids get `suffix`, summaries say which path they alias.
 */
function aliasOf(item: PathItemObject, suffix: string, of: string): PathItemObject {
  const alias: PathItemObject = {};
  for (const method of ['get', 'post'] as const) {
    const operation = item[method];
    if (operation)
      alias[method] = {
        ...operation,
        operationId: `${operation.operationId ?? method}${suffix}`,
        summary: `${operation.summary ?? ''} (as ${of})`,
      };
  }
  return alias;
}

/**
 * The OpenAPI 3.1 description of the proxy. Paths are relative to `servers[0].url`, which is the
 * configured base path, so "try it" works behind a base path without doubling it.
 */
export function buildOpenApi(
  config: Pick<ProxyConfig, 'proxyBasePath' | 'clientKeysHeaderName' | 'keyVary'> &
    Partial<BackstageSwitches>,
): OpenAPIObject {
  const builder = OpenApiBuilder.create()
    .addOpenApiVersion('3.1.0')
    .addTitle('flags-proxy')
    .addVersion(packageVersion())
    .addDescription(
      'Evaluates feature toggles for one user context on behalf of browser and mobile apps. ' +
        'Every endpoint except health needs a client key in the `' +
        config.clientKeysHeaderName +
        '` header (`<key>` or `Bearer <key>`). Every error body is `{id, name, message}`.',
    )
    .addServer({ url: config.proxyBasePath || '/', description: 'This proxy' })
    .addSecurityScheme('clientKey', {
      type: 'apiKey',
      in: 'header',
      name: config.clientKeysHeaderName,
      description: 'One of the configured client keys (clientKeys / FLAGS_PROXY_CLIENT_KEYS)',
    })
    .addSecurityScheme('serverSideToken', {
      type: 'apiKey',
      in: 'header',
      name: 'Authorization',
      description: 'One of expServerSideSdkConfig.tokens / EXP_SERVER_SIDE_SDK_CONFIG_TOKENS',
    })
    .addTag({ name: 'Evaluation', description: 'Toggle evaluation for a context' })
    .addTag({ name: 'Client SDKs', description: 'Endpoints SDKs use besides evaluation' })
    .addTag({ name: 'Operations', description: 'Health and metrics' })
    .addTag({ name: 'OpenFeature (OFREP)', description: 'OpenFeature Remote Evaluation Protocol' });
  for (const [name, scheme] of Object.entries({ ...OFREP_SECURITY_SCHEMES, ...EDGE_SECURITY_SCHEMES }))
    builder.addSecurityScheme(name, scheme);

  for (const [id, schema] of Object.entries(componentSchemas())) builder.addSchema(id, schema);
  for (const [name, response] of Object.entries(errorResponseComponents('#/components/schemas/Error'))) {
    builder.addResponse(name, response);
  }

  const doc = builder.getSpec();
  doc.security = [{ clientKey: [] }];
  const evaluation = evaluationOperations(false, config.keyVary.evaluation);
  const evaluationAll = evaluationOperations(true, config.keyVary.evaluation);
  const metrics = { post: metricsOperation('postClientMetrics', false) };
  const register = {
    post: clientSdkPost('postClientRegister', 'Register a client SDK instance', 'ClientRegistration'),
  };
  const features = clientFeaturesPath(config.keyVary.clientApi);
  const frontend = 'on the Unleash frontend API path';
  const edge = 'on Unleash Edge’s path';
  doc.paths = {
    '/proxy': evaluation,
    '/proxy/all': evaluationAll,
    '/api/frontend': aliasOf(evaluation, 'Frontend', frontend),
    '/api/frontend/all': aliasOf(evaluationAll, 'Frontend', frontend),
    '/api/frontend/client/metrics': aliasOf(metrics, 'Frontend', frontend),
    '/api/frontend/client/register': aliasOf(register, 'Frontend', frontend),
    '/api/proxy': aliasOf(evaluation, 'Edge', edge),
    '/api/proxy/all': aliasOf(evaluationAll, 'Edge', edge),
    '/api/proxy/client/metrics': aliasOf(metrics, 'Edge', edge),
    '/api/proxy/client/register': aliasOf(register, 'Edge', edge),
    '/api/client/features': aliasOf(features, 'Api', 'the client API, for Unleash client tokens'),
    '/api/client/metrics': aliasOf(metrics, 'Api', 'the client API, for Unleash client tokens'),
    '/api/client/register': aliasOf(register, 'Api', 'the client API, for Unleash client tokens'),
    '/proxy/health': {
      get: {
        operationId: 'getHealth',
        tags: ['Operations'],
        summary: 'Readiness: ok once the first synchronisation with the upstream succeeded',
        security: [],
        responses: {
          '200': {
            description: 'Ready',
            content: { 'text/html': { schema: { type: 'string', const: 'ok' } } },
          },
          ...errorResponses('NotReady'),
        },
      },
    },
    '/proxy/client/metrics': metrics,
    '/proxy/all/client/metrics': { post: metricsOperation('postClientMetricsAll', true) },
    '/proxy/client/register': register,
    '/proxy/client/features': features,
    '/proxy/internal-backstage/prometheus': {
      get: {
        operationId: 'getPrometheusMetrics',
        tags: ['Operations'],
        summary: 'Prometheus metrics of this proxy',
        responses: {
          '200': {
            description: 'Prometheus text exposition format',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          ...errorResponses('AuthenticationRequired', 'NotReady'),
        },
      },
    },
    ...ofrepPaths(config.keyVary.ofrep),
    ...backstagePaths(config),
    ...edgePaths(),
  };
  return doc;
}
