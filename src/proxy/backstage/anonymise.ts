import { parseUnleashToken } from '../token-validation/unleash-token';

/** Secrets shorter than this are shown as `****` alone: six characters from each end would reveal too much. */
const MIN_SHOWN_SECRET_LENGTH = 24;

/**
 * A token as `/internal-backstage/tokens` shows it, as Unleash Edge anonymises it: `project:environment.`
 * then the secret's first and last six characters around `****`. Where Edge would print a token whole
 * (not in Unleash's format) or nearly whole (a short secret), only `****` is shown.
 */
export function anonymiseToken(token: string): string {
  const parsed = parseUnleashToken(token);
  if (parsed === undefined) return '****';
  const dot = token.indexOf('.', token.indexOf(':'));
  const prefix = token.slice(0, dot + 1);
  const secret = token.slice(dot + 1);
  if (secret.length < MIN_SHOWN_SECRET_LENGTH) return `${prefix}****`;
  return `${prefix}${secret.slice(0, 6)}****${secret.slice(-6)}`;
}
