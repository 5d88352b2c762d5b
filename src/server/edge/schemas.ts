import { z } from 'zod';

/** At most this many tokens per request: a proxy batches, nobody needs thousands at once. */
export const MAX_TOKENS_PER_VALIDATION = 1000;

/** `POST /edge/validate`, as Unleash Edge sends it: `{"tokens": ["<token>", ...]}`. */
export const validateTokensSchema = z.object(
  {
    tokens: z
      .array(z.string({ error: 'each token must be a string' }), {
        error: 'must be an array of token strings',
      })
      .max(MAX_TOKENS_PER_VALIDATION, `must hold at most ${MAX_TOKENS_PER_VALIDATION} tokens`),
  },
  { error: 'must be a JSON object {"tokens": [...]}' },
);

/** One confirmed token of the answer (Unleash's edgeTokenSchema, with its environment). */
export interface EdgeToken {
  token: string;
  type: 'client' | 'frontend' | 'admin';
  /** Absent for a token that names no environment. */
  environment?: string;
  /** `["*"]` for every project. */
  projects: string[];
}
