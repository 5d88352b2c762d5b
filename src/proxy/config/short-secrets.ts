import { parseUnleashToken } from '../token-validation/unleash-token';

/**
 * Fewest characters of a secret a client must send. Shorter ones can be found by trying: with
 * 16 random characters even hexadecimal gives 2^64 guesses, past any request budget.
 */
export const MIN_SECRET_LENGTH = 16;

/**
 * The part of a configured key or token a guesser must find: an Unleash token's secret (after
 * `<project>:<environment>.`), a `secret@environment` key's secret (when the environment is one an
 * upstream token holds), else the whole key.
 */
export function secretPart(entry: string, environments: ReadonlySet<string>): string {
  if (parseUnleashToken(entry) !== undefined) return entry.slice(entry.indexOf('.', entry.indexOf(':')) + 1);
  const at = entry.lastIndexOf('@');
  if (at > 0 && environments.has(entry.slice(at + 1))) return entry.slice(0, at);
  return entry;
}

/** Configured secrets under the name the operator gave them (a variable, or a code option). */
export interface NamedSecrets {
  readonly name: string;
  readonly values: readonly string[];
}

/**
 * One start-up line per option holding secrets shorter than `MIN_SECRET_LENGTH`, naming the option
 * and the entries' positions, never a secret.
 */
export function shortSecretWarnings(
  given: readonly NamedSecrets[],
  environments: ReadonlySet<string>,
): string[] {
  const lines: string[] = [];
  for (const { name, values } of given) {
    const positions = values.flatMap((value, i) =>
      secretPart(value, environments).length < MIN_SECRET_LENGTH ? [i + 1] : [],
    );
    if (positions.length === 0) continue;
    const count = positions.length === 1 ? 'a secret' : `${positions.length} secrets`;
    const where = values.length > 1 ? ` (entry ${positions.join(', ')} of ${values.length})` : '';
    lines.push(
      `${name} holds ${count} shorter than ${MIN_SECRET_LENGTH} characters${where}: a short secret can be found by trying keys; use at least ${MIN_SECRET_LENGTH} random characters`,
    );
  }
  return lines;
}

/** The options holding secrets a client sends, each under the name it was given by. */
const SECRET_OPTIONS = [
  'clientKeys',
  'proxySecrets',
  'frontendTokens',
  'clientTokens',
  'expServerSideSdkConfig.tokens',
] as const;

/**
 * The short-secret lines of a configuration: the client keys (or their deprecated alias), the
 * upstream tokens (accepted as client tokens here too), offline mode's tokens and the server-side
 * SDK tokens, each option named as the operator gave it.
 */
export function configuredShortSecrets(
  get: <T>(key: string) => T,
  nameOf: (key: string) => string,
  upstreamTokens: readonly string[],
): string[] {
  const given: NamedSecrets[] = [];
  for (const key of SECRET_OPTIONS) {
    const values = get<string[] | undefined>(key);
    if (values !== undefined && values.length > 0) given.push({ name: nameOf(key), values });
  }
  if (upstreamTokens.length > 0) given.push({ name: nameOf('flagsApiToken'), values: upstreamTokens });
  const environments = new Set(upstreamTokens.flatMap((t) => parseUnleashToken(t)?.environment ?? []));
  return shortSecretWarnings(given, environments);
}
