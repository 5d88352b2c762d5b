/** `POST /edge/validate`'s request, as flags-server and flags-proxy both serve it. */
import { z } from 'zod';

/**
 * At most this many tokens per request: a proxy batches (flags-proxy sends at most 200, and serves the same endpoint to instances below it), nobody needs
 * more at once, and a guesser gets at most this many guesses per request.
 */
export const MAX_TOKENS_PER_VALIDATION = 250;

/**
 * The body limit of `/edge/validate`, Unleash's (Express's default `100kb`): a larger body is a 413
 * before it is parsed. With the token count it bounds a request's work: at most 100 KiB parsed, at
 * most 250 distinct tokens hashed (sha256 over at most 100 KiB in all), one indexed query.
 */
export const EDGE_VALIDATE_BODY_LIMIT = 100 * 1024;

/** `POST /edge/validate`, as Unleash Edge sends it: `{"tokens": ["<token>", ...]}`. */
export const validateTokensSchema = z.object(
  {
    // The count first: a longer array is refused without looking at its elements.
    tokens: z
      .array(z.unknown(), { error: 'must be an array of token strings' })
      .max(
        MAX_TOKENS_PER_VALIDATION,
        `must hold at most ${MAX_TOKENS_PER_VALIDATION} tokens per request (send more in several requests)`,
      )
      .pipe(z.array(z.string({ error: 'each token must be a string' }))),
  },
  { error: 'must be a JSON object {"tokens": [...]}' },
);
