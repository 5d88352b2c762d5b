import type { BackstageAnswer } from '../../backstage/backstage-answers';
import { edgeValidateAnswer } from '../../edge-api/validate-answer';
import type { AddressBudget } from '../../edge-api/address-budget';
import { EDGE_VALIDATE_BODY_LIMIT } from '../../edge-api/schemas';
import type { KeyScopes } from '../../environments/key-scopes';
import { Routes, type Endpoint, type KeyPolicy } from '../endpoint';

export interface EdgeEndpointsOptions {
  /** `{prefix}`. */
  basePath: string;
  /** Unleash Edge's backstage answers (`backstage/backstage-answers.ts`), those switched on. */
  backstage: readonly BackstageAnswer[];
  /** The key of the backstage's `features`: a client (backend) token, a frontend key refused with 403. */
  backendToken: KeyPolicy;
  keys: KeyScopes;
  /** The tokens a client address may ask `/edge/validate` about per second. */
  validateBudget: AddressBudget;
}

/**
 * Unleash Edge's own endpoints: the internal backstage under `{prefix}/internal-backstage` (no key
 * except `features`, no readiness: `ready` tells it) and the chain endpoint
 * `POST {prefix}/edge/validate` (no key: it is asked about tokens; its budget per address and its
 * body limit of 100 KiB are its own).
 */
export function edgeEndpoints(options: EdgeEndpointsOptions): Endpoint[] {
  const backstagePath = `${options.basePath}/internal-backstage`;
  const routes = new Routes();
  for (const answer of options.backstage)
    routes.get(
      `${backstagePath}${answer.path}`,
      answer.serve,
      answer.backendToken ? { key: options.backendToken } : {},
    );
  routes.post(`${options.basePath}/edge/validate`, edgeValidateAnswer(options.keys, options.validateBudget), {
    jsonBody: true,
    bodyLimit: EDGE_VALIDATE_BODY_LIMIT,
  });
  return routes.endpoints;
}
