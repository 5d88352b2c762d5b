import { ALL_PROJECTS, normaliseProjects } from '../scopes/scope';
import { parseUnleashToken } from '../token-validation/unleash-token';

/**
 * The projects an offline-mode token reads, as Unleash Edge's offline mode has it: a token in
 * Unleash's format `<project>:<environment>.<secret>` sees that project's toggles only; `*:` and
 * `[]:` tokens, and any other string (the whole string is the key), see every toggle. The
 * environment a token names does not choose definitions: the file is every environment's.
 */
export function offlineProjects(token: string): readonly string[] {
  const parsed = parseUnleashToken(token);
  if (!parsed || parsed.projects.length === 0) return ALL_PROJECTS;
  return normaliseProjects(parsed.projects);
}
