import { Router, type Response } from 'express';
import { ValidationError } from '../../common/errors/http-errors';
import { jsonBody } from '../../common/http/json-body';
import { describeIssues } from '../context/schemas';
import type { KeyKind, KeyScopes } from '../environments/key-scopes';
import { parseUnleashToken } from '../token-validation/unleash-token';
import { clientGone, retryAfter, ValidationUnavailable } from '../token-validation/validation-unavailable';
import { EDGE_VALIDATE_BODY_LIMIT, validateTokensSchema, type ValidatedEdgeToken } from './schemas';

const KINDS: readonly KeyKind[] = ['frontend', 'client'];

/** What this instance says of one token: confirmed, refused (undefined), or not known now (503). */
async function verdictOf(
  keys: KeyScopes,
  token: string,
  res: Response,
): Promise<ValidatedEdgeToken | undefined | ValidationUnavailable> {
  for (const kind of KINDS) {
    const known = keys.known(token, kind);
    const serving = known === undefined ? await keys.resolve(token, kind, () => clientGone(res)) : known;
    if (serving instanceof ValidationUnavailable) return serving;
    if (serving) {
      const { environment, projects } = serving.scope;
      return { token, type: kind, environment, projects, status: 'Validated' };
    }
  }
  return undefined;
}

/**
 * `POST /edge/validate` at `{base}`, so an instance of ours or an Unleash Edge can use this one as
 * its upstream: of the tokens sent (Unleash's format only, at most 250, body at most 100 KiB), those
 * this instance would serve — configured here, or confirmed by its own upstream through the
 * `TokenValidator` (batched, bounded, remembered) — with their type, environment and projects. A
 * token it cannot serve (unknown, refused, an environment it holds no upstream token for) is left
 * out; when the upstream could not be asked now the whole answer is a 503 with `Retry-After`, so
 * the caller does not remember a refusal.
 */
export function edgeValidateRouter(keys: KeyScopes): Router {
  const router = Router();
  router.post('/edge/validate', ...jsonBody(EDGE_VALIDATE_BODY_LIMIT), async (req, res, next) => {
    const parsed = validateTokensSchema.safeParse(req.body);
    if (!parsed.success) {
      next(new ValidationError(`Invalid request body: ${describeIssues(parsed.error)}`));
      return;
    }
    const tokens = [...new Set(parsed.data.tokens)].filter((t) => parseUnleashToken(t) !== undefined);
    const verdicts = await Promise.all(tokens.map((t) => verdictOf(keys, t, res)));
    const unavailable = verdicts.find((v): v is ValidationUnavailable => v instanceof ValidationUnavailable);
    if (unavailable) {
      next(retryAfter(res, unavailable));
      return;
    }
    const confirmed = verdicts.filter((v): v is ValidatedEdgeToken => v !== undefined);
    res.setHeader('Cache-Control', 'no-store');
    res.status(200).json({ tokens: confirmed });
  });
  return router;
}
