import type { ProxyConfig } from '../config/types';
import type { BackstageAnswer } from '../backstage/backstage-answers';
import { docsEndpoints } from '../docs/docs-endpoints';
import { AddressBudget } from '../edge-api/address-budget';
import type { Environment } from '../environments/environment';
import type { KeyScopes } from '../environments/key-scopes';
import type { Endpoint } from '../http/endpoint';
import { edgeEndpoints } from '../http/endpoints/backstage';
import { clientApiEndpoints } from '../http/endpoints/client-api';
import { frontendFeatureEndpoint } from '../http/endpoints/frontend-feature';
import { notFound } from '../http/endpoints/not-found';
import { ofrepBulkEndpoint, ofrepSingleEndpoint } from '../http/endpoints/ofrep-evaluate';
import { ofrepStreamEndpoints } from '../http/endpoints/ofrep-stream';
import { proxyExtrasEndpoints } from '../http/endpoints/proxy-extras';
import { proxyListEndpoint } from '../http/endpoints/proxy-list';
import type { KeyPolicies } from '../http/key-policies';
import { ofrepScopeOf } from '../ofrep/bulk-answer';
import { ofrepParts } from '../ofrep/change-stream';
import type { ProxyMetrics } from '../prometheus/proxy-metrics';
import type { ProcessBudget } from '../environments/process-budget';

export interface EndpointsOptions {
  config: ProxyConfig;
  /** The first environment: its pipeline's context limits for OFREP's bulk answers. */
  first: Environment;
  keys: KeyScopes;
  policies: KeyPolicies;
  metrics: ProxyMetrics;
  /** What a key's scrape shows, per environment (undefined: everything). */
  scrapeViews: ReadonlyMap<Environment, (text: string) => string>;
  budget: ProcessBudget;
  /** Unleash Edge's backstage answers, those switched on. */
  backstage: readonly BackstageAnswer[];
  /** True when a GET's context depends on its query, address and configuration only. */
  memoSound: boolean;
}

/**
 * Every route of the proxy, in one list: the paths, methods and key steps of each endpoint. The
 * front (`http/front.ts`) matches a request to one of them and runs the gate in front of it; what
 * matches none of the declared routes falls to a prefix's 404 and, last, the app's.
 */
export function proxyEndpoints(options: EndpointsOptions): Endpoint[] {
  const { config, policies } = options;
  const base = config.proxyBasePath;
  const proxyPath = `${base}/proxy`;
  const frontendPath = `${base}/api/frontend`;
  // The Unleash frontend API (Unleash Edge's paths) answers as /proxy does.
  const clientPaths = [proxyPath, frontendPath, `${base}/api/proxy`];
  const ofrepPath = `${base}/ofrep`;
  const ofrep = ofrepParts({
    pipeline: options.first.all.pipeline,
    clientKeys: options.keys.clientKeySecrets,
    scopeOf: (call) => ofrepScopeOf(call.scope),
    vary: config.keyVary.ofrep,
    bodies: options.budget.evaluation.bodies,
  });
  const ofrepEvaluate = {
    basePath: ofrepPath,
    key: policies.ofrep,
    bulk: ofrep.bulk,
    scopeOf: ofrepScopeOf,
    vary: config.keyVary.ofrep,
  };
  return [
    // the evaluations
    proxyListEndpoint({ paths: clientPaths, key: policies.evaluation, memoSound: options.memoSound }),
    frontendFeatureEndpoint(frontendPath, policies.evaluation),
    ofrepSingleEndpoint(ofrepEvaluate),
    ofrepBulkEndpoint(ofrepEvaluate),
    ...ofrepStreamEndpoints({
      basePath: ofrepPath,
      streamKey: policies.ofrepStream(ofrep.streamKeys),
      key: policies.ofrep,
      changeStream: ofrep.changeStream,
    }),
    // the rest of /proxy, and what backend SDKs and downstream instances call
    ...proxyExtrasEndpoints({
      proxyPath,
      clientPaths,
      metrics: options.metrics,
      scrapeView: (scope) => options.scrapeViews.get(scope.environment),
      scrapeKey: policies.scrape,
      evaluationKey: policies.evaluation,
    }),
    ...clientApiEndpoints({
      basePath: base,
      clientPaths,
      serverToken: policies.serverToken,
      clientToken: policies.client,
      usageKey: policies.usage,
      vary: config.keyVary.clientApi,
    }),
    // Unleash Edge's backstage and chain endpoint, the OpenAPI document
    ...edgeEndpoints({
      basePath: base,
      backstage: options.backstage,
      backendToken: policies.backendToken,
      keys: options.keys,
      validateBudget: new AddressBudget(config.edgeValidateTokensPerSecond),
    }),
    ...(config.enableOAS ? docsEndpoints(config) : []),
    // a path of nobody's
    notFound(['']),
  ];
}
