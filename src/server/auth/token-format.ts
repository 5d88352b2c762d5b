import { randomBytes } from 'node:crypto';

/** What an Unleash-format token says about itself: `<project>:<environment>.<secret>`. */
export interface TokenScope {
  environment: string;
  /** `["*"]` for `*:…`; `[]` for `[]:…` (several projects, not named in the token). */
  projects: string[];
}

const UNLEASH_TOKEN = /^([^:\s]+):([^.\s]+)\.(\S+)$/;

/** The scope an Unleash-format token names, or undefined for a token in any other format. */
export function tokenScope(token: string): TokenScope | undefined {
  const match = UNLEASH_TOKEN.exec(token);
  if (!match) return undefined;
  const [, project, environment] = match;
  return { environment, projects: project === '[]' ? [] : [project] };
}

/** The project part of a token for these projects: `*`, the one project, or `[]` for several. */
export function tokenProject(projects: readonly string[]): string {
  return projects.length === 1 ? projects[0] : '[]';
}

/** A new secret in Unleash's format, with 32 random bytes (hex) after the dot. */
export function newTokenSecret(projects: readonly string[], environment: string): string {
  return `${tokenProject(projects)}:${environment}.${randomBytes(32).toString('hex')}`;
}
