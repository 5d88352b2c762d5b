import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { AuthenticationRequired, HttpError, NoAccessError, NotReady } from '../../common/errors/http-errors';
import { keyFromHeader, secretMatcher } from '../auth/client-key';
import type { ScopeServing } from '../environments/environment';
import type { KeyScopes } from '../environments/key-scopes';
import { environmentRefused, type RequireScopeOptions } from '../environments/require-scope';
import { clientGone, retryAfter, ValidationUnavailable } from '../token-validation/validation-unavailable';
import { streamToken, type StreamKeys } from '../ofrep/auth';
import type { Call, KeyPolicy } from './endpoint';

/**
 * Who may call what: every key step of the proxy's endpoints, each a `KeyPolicy` the gate runs.
 * `scopeKey` (a key of one or more kinds in one or more headers: the evaluation endpoints, client
 * usage, the client API, the keyed scrape), `serverTokenKey` (the server-side SDK tokens of
 * `/proxy/client/features`), `ofrepKey` and `ofrepStreamKey` (OFREP's, resolved once in
 * `resolveOfrepKey`).
 */

/** A key whose environment cannot be served now: 503 with `Retry-After` (unless allowed); else the serving. */
function servedNow(call: Call, serving: ScopeServing, whileUnserved = false): ScopeServing | HttpError {
  const refused = whileUnserved ? undefined : environmentRefused(serving);
  if (refused === undefined) return serving;
  call.res.setHeader('Retry-After', '1');
  return refused;
}

/**
 * The first accepted key of a request with what serves it; `missing` when no header carries one;
 * a `ValidationUnavailable` when no key is accepted and one could not be validated now (503, not
 * 401). `gone` gives the signal of the client going, for a wait on the upstream.
 */
async function resolveRequestKey(
  opts: RequireScopeOptions,
  headers: IncomingHttpHeaders,
  gone?: () => AbortSignal,
): Promise<{ key: string; serving: ScopeServing } | AuthenticationRequired | ValidationUnavailable> {
  let sawKey = false;
  let unavailable: ValidationUnavailable | undefined;
  for (const { header, kind } of opts.attempts) {
    const key = keyFromHeader(headers[header]);
    if (key === undefined) continue;
    sawKey = true;
    const known = opts.keys.known(key, kind);
    const serving = known === undefined ? await opts.keys.resolve(key, kind, gone) : (known ?? undefined);
    if (serving instanceof ValidationUnavailable) unavailable ??= serving;
    else if (serving !== undefined) return { key, serving };
  }
  return unavailable ?? (sawKey ? opts.invalid : opts.missing);
}

/**
 * A key of `options.attempts` (plain or `Bearer`), the first accepted one: 401 without one or when
 * all are refused, 503 when one could not be validated now or its environment cannot be served
 * (unless `whileUnserved`). A configured key, or one the upstream already validated, is answered
 * without waiting (a keep-alive connection repeating its key is not hashed again); a key that
 * must be asked about before an accepted one waits, so the first accepted key always wins.
 */
export function scopeKey(options: RequireScopeOptions): KeyPolicy {
  const { keys, attempts, whileUnserved } = options;
  return {
    now(call) {
      let sawKey = false;
      for (const { header, kind } of attempts) {
        const key = keyFromHeader(call.req.headers[header]);
        if (key === undefined) continue;
        sawKey = true;
        const known = keys.knownOn(call.req.socket, key, kind);
        if (known === undefined) return undefined;
        if (known === null) continue;
        call.key = key;
        return servedNow(call, known, whileUnserved);
      }
      return sawKey ? options.invalid : options.missing;
    },
    async later(call) {
      const found = await resolveRequestKey(options, call.req.headers, () => clientGone(call.res));
      if (found instanceof ValidationUnavailable) return retryAfter(call.res, found);
      if (found instanceof HttpError) return found;
      call.key = found.key;
      return servedNow(call, found.serving, whileUnserved);
    },
  };
}

/**
 * `policy`, with its 401 turned into `refusal` when `wrongKind` says the request carries a key of
 * another kind (a frontend key where a backend token is needed: 403).
 */
function refusingOtherKinds(
  policy: KeyPolicy,
  wrongKind: (call: Call) => boolean,
  refusal: HttpError,
): KeyPolicy {
  const refine = (call: Call, found: ScopeServing | HttpError): ScopeServing | HttpError =>
    found instanceof AuthenticationRequired && wrongKind(call) ? refusal : found;
  return {
    now(call) {
      const found = policy.now(call);
      return found === undefined ? undefined : refine(call, found);
    },
    async later(call) {
      return refine(call, await policy.later(call));
    },
  };
}

/** Server-side SDK tokens always travel in `Authorization`, as `unleash-client` sends them. */
const TOKEN_HEADER = 'authorization';
const TOKENS_OPTION = 'expServerSideSdkConfig.tokens / EXP_SERVER_SIDE_SDK_CONFIG_TOKENS';

/**
 * One of the server-side SDK tokens in `Authorization` (`<token>` or `Bearer <token>`), for what
 * `serving` serves (the first environment): 401 without one, with another secret, or with no tokens
 * configured (naming the option to set); 503 while that environment cannot be served.
 */
function serverTokenKey(tokens: readonly string[], serving: ScopeServing): KeyPolicy {
  const matches = secretMatcher(tokens);
  const notConfigured = new AuthenticationRequired(
    `Server-side SDK access is not configured on this proxy: set ${TOKENS_OPTION}`,
  );
  const missing = new AuthenticationRequired(
    'Missing server-side SDK token: send it in the "authorization" header',
  );
  const invalid = new AuthenticationRequired('Invalid server-side SDK token in the "authorization" header');
  const check = (call: Call): ScopeServing | HttpError => {
    if (tokens.length === 0) return notConfigured;
    const token = keyFromHeader(call.req.headers[TOKEN_HEADER]);
    if (token === undefined) return missing;
    if (!matches(token)) return invalid;
    call.key = token;
    return servedNow(call, serving);
  };
  return { now: check, later: (call) => Promise.resolve(check(call)) };
}

export interface OfrepKeyOptions {
  keys: KeyScopes;
  /** The configured client key header. */
  header: string;
  /** Server-side SDK tokens: valid credentials, but not for evaluation (403). */
  serverTokens: readonly string[];
}

/**
 * OFREP's key step: the first accepted key of the configured header (plain or `Bearer`),
 * `Authorization: Bearer` and `X-API-Key`. 401 without a key or when none is accepted, 403 for a
 * server-side SDK token, 503 when a key could not be validated now or its environment cannot be
 * served (after the other keys were tried). A key of the configured header that is known now is
 * answered without waiting. The same resolution opens OFREP's change stream (`resolveOfrepKey`).
 */
export function ofrepKey(options: OfrepKeyOptions): KeyPolicy {
  const { keys, header } = options;
  return {
    now(call) {
      const key = keyFromHeader(call.req.headers[header]);
      if (!key) return undefined;
      const known = keys.knownOn(call.req.socket, key, 'frontend');
      if (!known || !known.environment.isServing()) return undefined;
      call.key = key;
      return known;
    },
    async later(call) {
      const found = await resolveOfrepKey(options, call.req, call.res);
      if (found instanceof HttpError) return found;
      call.key = found.key;
      return found.serving;
    },
  };
}

/**
 * OFREP's key → scope step, written once: the first of `candidates` (by default the request's, in
 * `ofrepCandidates`' order) that the key step accepts and whose environment is served, with what
 * serves it; else the error to answer (see `ofrepKey`).
 */
export async function resolveOfrepKey(
  options: OfrepKeyOptions,
  req: IncomingMessage,
  res: ServerResponse,
  candidates: readonly string[] = ofrepCandidates(req.headers, options.header),
): Promise<{ readonly key: string; readonly serving: ScopeServing } | HttpError> {
  let notReady: NotReady | undefined;
  for (const key of candidates) {
    const serving = await options.keys.resolve(key, 'frontend', () => clientGone(res));
    if (serving instanceof ValidationUnavailable) {
      notReady ??= retryAfter(res, serving);
      continue;
    }
    if (serving === undefined) continue;
    const refused = environmentRefused(serving);
    if (refused) {
      notReady ??= refused;
      continue;
    }
    return { key, serving };
  }
  if (notReady) {
    if (!res.hasHeader('Retry-After')) res.setHeader('Retry-After', '1');
    return notReady;
  }
  if (candidates.length === 0) return new AuthenticationRequired('Missing client key');
  if (options.serverTokens.length > 0 && candidates.some((k) => secretMatcher(options.serverTokens)(k)))
    return new NoAccessError('Server-side SDK tokens cannot evaluate flags; use a client key');
  return new AuthenticationRequired('Invalid client key');
}

/**
 * OFREP's change stream: a client key as `ofrepKey` takes it (non-browser clients), or the stream
 * token of one in the `token` query parameter (browsers, whose `EventSource` cannot send headers):
 * the key behind the token goes through the same resolution. 401 for a token that opens nothing.
 */
export function ofrepStreamKey(options: OfrepKeyOptions, streamKeys: StreamKeys): KeyPolicy {
  const byHeader = ofrepKey(options);
  const configured = new Map(options.keys.clientKeySecrets.map((key) => [streamToken(key), key]));
  const invalidToken = new AuthenticationRequired('Invalid stream token');
  return {
    now: () => undefined,
    async later(call) {
      const token = new URLSearchParams(call.query).get('token');
      if (token === null || token === '') return byHeader.later(call);
      const key = configured.get(token) ?? streamKeys.keyOf(token);
      if (key === undefined) return invalidToken;
      const found = await resolveOfrepKey(options, call.req, call.res, [key]);
      if (found instanceof AuthenticationRequired) return invalidToken;
      if (found instanceof HttpError) return found;
      call.key = found.key;
      return found.serving;
    },
  };
}

/** The candidate keys of an OFREP request: the configured header, `Authorization`, `X-API-Key`. */
function ofrepCandidates(headers: IncomingHttpHeaders, header: string): string[] {
  const found = [
    keyFromHeader(headers[header]),
    keyFromHeader(headers.authorization),
    keyFromHeader(headers['x-api-key']),
  ];
  return [...new Set(found.filter((k): k is string => k !== undefined && k !== ''))];
}

/** Every key step of the app, each built once (see the top of this file). */
export interface KeyPolicies {
  /** The evaluation endpoints and anything else under their paths: a frontend key. */
  readonly evaluation: KeyPolicy;
  /** The key's scrape: a frontend key, also while its environment is not served. */
  readonly scrape: KeyPolicy;
  /** Usage under the evaluation paths: a frontend key, or a client token in `Authorization`. */
  readonly usage: KeyPolicy;
  /** The client API: a client (backend) token in `Authorization`. */
  readonly client: KeyPolicy;
  /** The backstage's `features`: a client token; a frontend key is a 403. */
  readonly backendToken: KeyPolicy;
  /** `/proxy/client/features`: a server-side SDK token, for the first environment. */
  readonly serverToken: KeyPolicy;
  /** OFREP's evaluations and its change stream. */
  readonly ofrep: KeyPolicy;
  ofrepStream(streamKeys: StreamKeys): KeyPolicy;
}

/**
 * The app's key steps: frontend keys in `header` (plain or `Bearer`), client and server-side SDK
 * tokens in `Authorization`, OFREP's three headers; `first` is what a server-side SDK token reads.
 */
export function keyPolicies(
  keys: KeyScopes,
  header: string,
  serverTokens: readonly string[],
  first: ScopeServing,
): KeyPolicies {
  const missing = new AuthenticationRequired(`Missing client key: send it in the "${header}" header`);
  const frontend: RequireScopeOptions = {
    keys,
    attempts: [{ header, kind: 'frontend' }],
    missing,
    invalid: new AuthenticationRequired(`Invalid client key in the "${header}" header`),
  };
  const client: RequireScopeOptions = {
    keys,
    attempts: [{ header: TOKEN_HEADER, kind: 'client' }],
    missing: new AuthenticationRequired('Missing client token: send it in the "authorization" header'),
    invalid: new AuthenticationRequired('Invalid client token in the "authorization" header'),
  };
  // frontend SDKs send their key, server-side SDKs their token
  const usage: RequireScopeOptions = {
    keys,
    attempts: [
      { header, kind: 'frontend' },
      { header: TOKEN_HEADER, kind: 'client' },
    ],
    missing,
    invalid: new AuthenticationRequired(
      `Invalid client key in the "${header}" header` +
        (serverTokens.length > 0 ? ' (and no valid server-side SDK token in "authorization")' : ''),
    ),
  };
  const ofrepOptions: OfrepKeyOptions = { keys, header, serverTokens };
  const frontendKeyInAuthorization = (call: Call): boolean => {
    const key = keyFromHeader(call.req.headers[TOKEN_HEADER]);
    return key !== undefined && Boolean(keys.known(key, 'frontend'));
  };
  return {
    evaluation: scopeKey(frontend),
    scrape: scopeKey({ ...frontend, whileUnserved: true }),
    usage: scopeKey(usage),
    client: scopeKey(client),
    backendToken: refusingOtherKinds(
      scopeKey(client),
      frontendKeyInAuthorization,
      new NoAccessError(
        '/internal-backstage/features shows flag definitions: it needs a client (backend) token, not a frontend key',
      ),
    ),
    serverToken: serverTokenKey(serverTokens, first),
    ofrep: ofrepKey(ofrepOptions),
    ofrepStream: (streamKeys) => ofrepStreamKey(ofrepOptions, streamKeys),
  };
}
