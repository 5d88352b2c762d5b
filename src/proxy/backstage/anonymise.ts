import { parseUnleashToken } from '../token-validation/unleash-token';

/**
 * A token as `/internal-backstage/tokens` shows it: `project:environment.****`, the scope Unleash
 * Edge shows and none of the secret; `****` for a key not in Unleash's format. Every secret is
 * hidden alike, so the listing never tells a short (guessable) secret from a long one, as showing
 * characters of the long ones only (Edge shows the first and last six) would.
 */
export function anonymiseToken(token: string): string {
  if (parseUnleashToken(token) === undefined) return '****';
  const dot = token.indexOf('.', token.indexOf(':'));
  return `${token.slice(0, dot + 1)}****`;
}
