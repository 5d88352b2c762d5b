import { z } from 'zod';

/** The NUL character: PostgreSQL can store it neither in `text` nor in `jsonb`. */
const NUL = '\u0000';
export const NUL_MESSAGE = 'must not contain the NUL character (U+0000)';

/**
 * A lone (unpaired) surrogate: `jsonb` refuses its escape, and a `text` column would silently store
 * U+FFFD instead. With the `u` flag a well-formed pair is one code point and does not match.
 */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
export const SURROGATE_MESSAGE =
  'must not contain a lone surrogate (U+D800 to U+DFFF): it is not valid Unicode';

/**
 * A string of a request that reaches PostgreSQL (a column or a `jsonb` value). What PostgreSQL cannot
 * store — a NUL, a lone surrogate — is a 400 naming the field, before any query, instead of the
 * database's error (a 500) or a silently changed value. Every schema field whose value is stored is
 * built on this one refinement; chain `.trim()`, `.min()`, `.max()` after it.
 */
export function storedText(error = 'must be a string'): z.ZodString {
  return z
    .string({ error })
    .refine((s) => !s.includes(NUL), NUL_MESSAGE)
    .refine((s) => !LONE_SURROGATE.test(s), SURROGATE_MESSAGE);
}
