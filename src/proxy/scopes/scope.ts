/**
 * What a key may read: one environment's definitions, limited to some projects (`*`: every
 * project the environment's upstream token reads).
 */
export interface Scope {
  /** The environment's name in the registry. */
  readonly environment: string;
  /** Sorted, without duplicates; `['*']` for every project. */
  readonly projects: readonly string[];
}

export const ALL_PROJECTS: readonly string[] = Object.freeze(['*']);

/** Sorted, unique projects; `['*']` when any of them is `*`. */
export function normaliseProjects(projects: readonly string[]): readonly string[] {
  if (projects.includes('*')) return ALL_PROJECTS;
  return Object.freeze([...new Set(projects)].sort());
}

export function isAllProjects(projects: readonly string[]): boolean {
  return projects.length === 1 && projects[0] === '*';
}

/** True when `outer` reads every project `inner` names (Edge's "broader or equal project access"). */
export function coversProjects(outer: readonly string[], inner: readonly string[]): boolean {
  if (isAllProjects(outer)) return true;
  if (isAllProjects(inner)) return false;
  return inner.every((p) => outer.includes(p));
}

/** A stable text of a scope: the same on every replica, part of derived ETags. */
export function scopeKey(scope: Scope): string {
  return `${scope.environment}\u0000${scope.projects.join('\u0001')}`;
}
