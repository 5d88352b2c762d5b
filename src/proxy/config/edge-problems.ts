import type { OptionSource, OptionSpec } from '../../common/config/resolve';
import { parseUnleashToken } from '../token-validation/unleash-token';

/**
 * Start-up problems as Unleash Edge's contract words them: each names the variable the operator
 * set (or must set) under Edge's names, and what a good value looks like; never the
 * specification's counterpart (DESIGN, fifth round). Values are never shown: tokens are secrets.
 */

export const TOKEN_FORM = '`<project>:<environment>.<secret>` (e.g. `*:production.a1b2c3`)';

/** What each required option is called under Edge's contract when it is missing. */
const MISSING: Record<string, string> = {
  flagsUrl:
    'UPSTREAM_URL is missing: the Unleash server to read flags from, its base URL without /api (e.g. http://unleash:4242)',
  flagsApiToken: `TOKENS is missing: the client tokens definitions are read with, comma-separated, each ${TOKEN_FORM}`,
  clientKeys: `PRETRUSTED_TOKENS is missing, and needed while no TOKENS entry is in Unleash's format or FLAGS_UPSTREAM_TOKEN_VALIDATION=false (keys cannot be validated upstream): comma-separated frontend tokens, each ${TOKEN_FORM} or \`<secret>@<environment>\``,
};

/** The missing-options line as one line per option, in Edge's words. */
export function edgeMissingLines(missing: readonly OptionSpec[]): string[] {
  return missing.map((spec) => MISSING[spec.key] ?? `${spec.env[0] ?? spec.key} is missing`);
}

/** `Invalid UPSTREAM_URL="x" (alias of FLAGS_URL): …` without the specification's counterpart. */
export function withoutAliasNote(problem: string): string {
  return problem.replace(/^(Invalid [A-Z0-9_]+(?:=.*?)?) \(alias of [A-Z0-9_]+\)(: )/, '$1$2');
}

/**
 * The entries of Edge's `TOKENS` that Edge would refuse, one line each: quoted by YAML, separated
 * by spaces, or an Unleash-looking token without its environment or secret. An entry without `:`
 * is another kind of token (served, but not validated upstream), as under the specification.
 */
export function tokensProblems(raw: string, source: OptionSource | undefined): string[] {
  const name = source?.name ?? 'TOKENS';
  const trimmed = raw.trim();
  if (/^["']|["']$/.test(trimmed))
    return [
      `${name} is quoted: give the tokens without quotes (a YAML value quoted twice keeps the inner quotes), comma-separated, each ${TOKEN_FORM}`,
    ];
  const entries = raw
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  const problems: string[] = [];
  entries.forEach((entry, i) => {
    const which = entries.length > 1 ? `entry ${i + 1} of ${name}` : name;
    if (/\s/.test(entry))
      problems.push(`${which} holds a space: separate tokens with commas, not spaces; each is ${TOKEN_FORM}`);
    else if (entry.includes(':') && parseUnleashToken(entry) === undefined) {
      const afterColon = entry.slice(entry.indexOf(':') + 1);
      const what = afterColon.includes('.')
        ? "is not a token in Unleash's format"
        : 'has no secret after its environment';
      problems.push(`${which} ${what}: each token is ${TOKEN_FORM}, comma-separated`);
    }
  });
  return problems;
}
