/**
 * Unleash's API token format: `<project>:<environment>.<secret>`, `*:<environment>.<secret>` (every
 * project) and `[]:<environment>.<secret>` (several projects, named only by the upstream).
 */
export interface UnleashToken {
  /** The whole token, as sent. */
  readonly token: string;
  readonly environment: string;
  /** `*` for every project; the one project named; empty for `[]` (the upstream names them). */
  readonly projects: readonly string[];
}

/** Longest string treated as a token; a longer one is refused without asking anyone. */
export const MAX_TOKEN_LENGTH = 512;

const SHAPE = /^(\*|\[\]|[A-Za-z0-9_~-][A-Za-z0-9_.~-]*):([A-Za-z0-9_~-][A-Za-z0-9_~-]*)\.([\x21-\x7e]+)$/;

/** The parts of an Unleash-format token; undefined for any other string. */
export function parseUnleashToken(value: string): UnleashToken | undefined {
  if (value.length > MAX_TOKEN_LENGTH) return undefined;
  const match = SHAPE.exec(value);
  if (!match) return undefined;
  const [, project, environment] = match;
  return { token: value, environment, projects: project === '[]' ? [] : [project] };
}
