import { parseUnleashToken } from '../token-validation/unleash-token';
import { normaliseProjects } from '../scopes/scope';

/** One configured upstream token and the environment it names. */
export interface UpstreamToken {
  readonly token: string;
  /** The token's environment; for a token in another format, the configured environment or `default`. */
  readonly environment: string;
  /** `['*']`, one project, or `[]` for Unleash's `[]:` (named only by the upstream). */
  readonly projects: readonly string[];
  /** True when the token is in Unleash's format (its environment is named by it). */
  readonly named: boolean;
}

/** `FLAGS_API_TOKEN`'s tokens: comma-separated, each in Unleash's format or any other. */
export function upstreamTokens(
  tokens: readonly string[],
  configuredEnvironment: string | undefined,
): UpstreamToken[] {
  return tokens.map((token) => {
    const parsed = parseUnleashToken(token);
    if (!parsed)
      return { token, environment: configuredEnvironment ?? 'default', projects: ['*'], named: false };
    return {
      token,
      environment: parsed.environment,
      projects: parsed.projects.length === 0 ? [] : normaliseProjects(parsed.projects),
      named: true,
    };
  });
}
