import { bulkMetricsAnswer } from '../../edge-api/bulk-metrics';
import { usageAnswers } from '../../client-metrics/usage-answers';
import { clientFeaturesAnswer } from '../../server-sdk/client-features';
import { Routes, type Endpoint, type KeyPolicy } from '../endpoint';
import { notFound } from './not-found';

export interface ClientApiOptions {
  /** `{prefix}`: the client API is `{prefix}/api/client/…`. */
  basePath: string;
  /** The evaluation paths (`/proxy`, `/api/frontend`, `/api/proxy` under the prefix). */
  clientPaths: readonly string[];
  /** `/proxy/client/features`: a server-side SDK token. */
  serverToken: KeyPolicy;
  /** The client API: a client (backend) token, its scope limiting what it reads. */
  clientToken: KeyPolicy;
  /** Usage under the evaluation paths: a frontend key, or a client token in `Authorization`. */
  usageKey: KeyPolicy;
  /** The `Vary` of the definitions' answers (`KeyVary.clientApi`). */
  vary: string;
}

/**
 * What backend SDKs and downstream instances call: the definitions (`GET …/client/features`, under
 * `/proxy` with a server-side SDK token, under `/api` with a client token, as Unleash Edge serves
 * them), usage (`POST …/client/metrics`, `…/client/register`, Edge's `…/client/metrics/bulk`),
 * and a 404 for anything else under `/api/client`. Every one of them waits for readiness.
 */
export function clientApiEndpoints(options: ClientApiOptions): Endpoint[] {
  const { basePath, clientPaths } = options;
  const api = `${basePath}/api`;
  // one answer for both paths: a body is rendered once per definitions, revision and filter
  const features = clientFeaturesAnswer({ featuresOf: (call) => call.scope.features, vary: options.vary });
  const under = (paths: readonly string[], tail: string): string[] => paths.map((p) => `${p}${tail}`);
  const routes = new Routes({ needsReady: true })
    .get(`${basePath}/proxy/client/features`, features, { key: options.serverToken })
    .get(`${api}/client/features`, features, { key: options.clientToken })
    .post(`${api}/client/metrics/bulk`, bulkMetricsAnswer, { key: options.clientToken, jsonBody: true });
  // usage: frontend keys (or client tokens) under the evaluation paths, client tokens under /api
  for (const [paths, key] of [
    [clientPaths, options.usageKey],
    [[api], options.clientToken],
  ] as const) {
    routes
      .post(
        [...under(paths, '/client/metrics'), ...under(paths, '/all/client/metrics')],
        usageAnswers.metrics,
        {
          key,
          jsonBody: true,
        },
      )
      .post(
        [...under(paths, '/client/register'), ...under(paths, '/all/client/register')],
        usageAnswers.register,
        {
          key,
          jsonBody: true,
        },
      );
  }
  return [...routes.endpoints, notFound([`${api}/client`], { needsReady: true })];
}
