import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { serverRoot } from '../token-validation/validation-client';

/** What is learnt from the upstream's answers to this app's requests. */
export interface UpstreamExchangeListener {
  /** A definitions fetch (`GET …/client/features`) answered with `status` after `ms`. */
  fetchAnswered(status: number, ms: number): void;
  /** A token validation call (`POST …/edge/validate`) answered with `status`. */
  validationAnswered(status: number): void;
  /** An answer naming the upstream's server and version. */
  upstreamVersion(server: 'edge' | 'unleash', version: string): void;
}

export interface UpstreamExchangeOptions {
  /** The agents of this app's upstream requests: only requests through them are looked at. */
  agents: ReadonlySet<object>;
  /** The path of the definitions (`/api/client/features`). */
  featuresPath: string;
  /** The path of token validation (`/edge/validate`). */
  validatePath: string;
}

const START = 'http.client.request.start';
const ANSWERED = 'http.client.response.finish';

interface RequestStart {
  request: ClientRequest;
}
interface RequestAnswered {
  request: ClientRequest;
  response: IncomingMessage;
}

function pathOf(request: ClientRequest): string {
  // through an HTTP proxy server the path is the whole URL; the base is ignored then
  return new URL(request.path, 'http://upstream.invalid').pathname;
}

function header(response: IncomingMessage, name: string): string | undefined {
  const value = response.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * Watches this app's HTTP exchanges with its upstream through Node's `http.client.*` diagnostics
 * channels (whatever makes the request: the SDK's fetcher, token validation), recognised by the
 * agent they go through, which is this app's alone. A fetch is timed from the request's start to
 * the answer's headers, as Unleash Edge times it. Returns the function that stops watching.
 */
export function watchUpstreamExchanges(
  options: UpstreamExchangeOptions,
  listener: UpstreamExchangeListener,
): () => void {
  const started = new WeakMap<ClientRequest, number>();
  const ours = (request: ClientRequest): boolean => {
    const agent: unknown = Reflect.get(request, 'agent');
    return typeof agent === 'object' && agent !== null && options.agents.has(agent);
  };
  const onStart = (message: unknown): void => {
    const { request } = message as RequestStart;
    if (ours(request)) started.set(request, performance.now());
  };
  const onAnswered = (message: unknown): void => {
    const { request, response } = message as RequestAnswered;
    const startedAt = started.get(request);
    if (startedAt === undefined) return;
    started.delete(request);
    const status = response.statusCode ?? 0;
    const path = pathOf(request);
    if (request.method === 'GET' && path === options.featuresPath)
      listener.fetchAnswered(status, performance.now() - startedAt);
    else if (request.method === 'POST' && path === options.validatePath) listener.validationAnswered(status);
    const edge = header(response, 'x-edge-version');
    const unleash = header(response, 'x-unleash-version');
    if (edge !== undefined) listener.upstreamVersion('edge', edge);
    else if (unleash !== undefined) listener.upstreamVersion('unleash', unleash);
  };
  subscribe(START, onStart);
  subscribe(ANSWERED, onAnswered);
  return () => {
    unsubscribe(START, onStart);
    unsubscribe(ANSWERED, onAnswered);
  };
}

/**
 * The exchanges of an app whose upstream is `flagsUrl` (`…/api`) and whose requests go through the
 * agents `agentFor` gives; undefined when `flagsUrl` is no URL (offline mode has no upstream).
 */
export function upstreamExchanges(
  flagsUrl: string,
  agentFor: (url: URL) => object,
): UpstreamExchangeOptions | undefined {
  if (!URL.canParse(flagsUrl)) return undefined;
  const features = new URL(`${flagsUrl.replace(/\/+$/, '')}/client/features`);
  const validate = new URL(`${serverRoot(flagsUrl)}/edge/validate`);
  return {
    agents: new Set([agentFor(features), agentFor(validate)]),
    featuresPath: features.pathname,
    validatePath: validate.pathname,
  };
}
