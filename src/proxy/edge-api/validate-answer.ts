import { setMaxListeners } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { Response } from 'express';
import { TooManyRequests, ValidationError } from '../../common/errors/http-errors';
import { sourceOf } from '../client-metrics/usage-answers';
import { describeIssues } from '../context/schemas';
import type { ScopeServing } from '../environments/environment';
import type { KeyKind, KeyScopes } from '../environments/key-scopes';
import { ValidationCaller } from '../token-validation/waiting-tokens';
import { parseUnleashToken } from '../token-validation/unleash-token';
import { clientGone, retryAfter, ValidationUnavailable } from '../token-validation/validation-unavailable';
import { budgetHolder, type AddressBudget } from './address-budget';
import { MAX_TOKENS_PER_VALIDATION, validateTokensSchema, type ValidatedEdgeToken } from './schemas';

const KINDS: readonly KeyKind[] = ['frontend', 'client'];

const confirmation = (token: string, kind: KeyKind, serving: ScopeServing): ValidatedEdgeToken => {
  const { environment, projects } = serving.scope;
  return { token, type: kind, environment, projects, status: 'Validated' };
};

/**
 * What this instance says of one token: confirmed, refused (undefined), or not known now (503).
 * What is known without asking (configured here, remembered) is answered first, so a configured
 * token is never sent upstream.
 */
async function verdictOf(
  keys: KeyScopes,
  token: string,
  gone: () => AbortSignal,
  caller: ValidationCaller,
): Promise<ValidatedEdgeToken | undefined | ValidationUnavailable> {
  const unknownKinds: KeyKind[] = [];
  for (const kind of KINDS) {
    const known = keys.known(token, kind);
    if (known) return confirmation(token, kind, known);
    if (known === undefined) unknownKinds.push(kind);
  }
  for (const kind of unknownKinds) {
    const serving = await keys.resolve(token, kind, gone, caller);
    if (serving instanceof ValidationUnavailable) return serving;
    if (serving) return confirmation(token, kind, serving);
  }
  return undefined;
}

/**
 * The answer of `POST /edge/validate` at `{base}` (its body at most `EDGE_VALIDATE_BODY_LIMIT`, read
 * by the gate), so an instance of ours or an Unleash Edge can use this one as
 * its upstream: of the tokens sent (Unleash's format only, at most 250, body at most 100 KiB), those
 * this instance would serve — configured here, or confirmed by its own upstream through the
 * `TokenValidator` (batched, bounded, remembered) — with their type, environment and projects. A
 * token it cannot serve (unknown, refused, an environment it holds no upstream token for) is left
 * out; when the upstream could not be asked now the whole answer is a 503 with `Retry-After`, so
 * the caller does not remember a refusal. Each client address (an IPv6 /64) has a budget of tokens
 * per second (`edgeValidateTokensPerSecond`): past it, 429 with `Retry-After`. The request is one
 * caller of the validation queue, so its tokens never push out another caller's key.
 */
export function edgeValidateAnswer(
  keys: KeyScopes,
  budget: AddressBudget,
): (req: IncomingMessage, res: Response, call: { body: unknown }) => Promise<void> {
  return async (req, res, call) => {
    const parsed = validateTokensSchema.safeParse(call.body);
    if (!parsed.success) throw new ValidationError(`Invalid request body: ${describeIssues(parsed.error)}`);
    const tokens = [...new Set(parsed.data.tokens)].filter((t) => parseUnleashToken(t) !== undefined);
    // each token costs what a request of its own to a frontend endpoint would: a guess
    const address = budgetHolder(sourceOf(req));
    const wait = tokens.length === 0 ? 0 : budget.spend(address, tokens.length);
    if (wait > 0) {
      res.setHeader('Retry-After', String(wait));
      throw new TooManyRequests(
        `Too many tokens asked about from this address: at most ${budget.perSecond} a second (${budget.burst} at once); retry after ${wait} s`,
      );
    }
    // one signal of the client going for every token it waits for: one listener on the response,
    // and one per waiting token on the signal (up to the request's token limit)
    let signal: AbortSignal | undefined;
    const gone = (): AbortSignal => {
      if (signal === undefined) {
        signal = clientGone(res);
        setMaxListeners(MAX_TOKENS_PER_VALIDATION + 1, signal);
      }
      return signal;
    };
    // the request is one caller of the validation queue, however many tokens it carries
    const caller = new ValidationCaller();
    const verdicts = await Promise.all(tokens.map((t) => verdictOf(keys, t, gone, caller)));
    const unavailable = verdicts.find((v): v is ValidationUnavailable => v instanceof ValidationUnavailable);
    if (unavailable) throw retryAfter(res, unavailable);
    const confirmed = verdicts.filter((v): v is ValidatedEdgeToken => v !== undefined);
    res.setHeader('Cache-Control', 'no-store');
    res.status(200).json({ tokens: confirmed });
  };
}
