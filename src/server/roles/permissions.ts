/**
 * The permission catalogue of flags-server: every permission a role can hold, and its kind. Root
 * permissions apply to the whole instance, project permissions to a project, environment
 * permissions to one environment of a project (they need an `environment`). Served at
 * `GET /api/admin/permissions`.
 */
export type PermissionKind = 'root' | 'project' | 'environment';

export interface PermissionDefinition {
  name: string;
  kind: PermissionKind;
  displayName: string;
  /** False for permissions no custom role may hold (ADMIN belongs to the built-in Admin role). */
  assignable: boolean;
}

/** Needed to create, change or delete roles. */
export const ADMIN = 'ADMIN';

const def = (
  name: string,
  kind: PermissionKind,
  displayName: string,
  assignable = true,
): PermissionDefinition => ({
  name,
  kind,
  displayName,
  assignable,
});

export const PERMISSIONS: readonly PermissionDefinition[] = [
  def(ADMIN, 'root', 'Administer everything', false),
  def('CREATE_PROJECT', 'root', 'Create projects'),
  def('UPDATE_APPLICATION', 'root', 'Update applications'),
  def('CREATE_STRATEGY', 'root', 'Create activation strategies'),
  def('UPDATE_STRATEGY', 'root', 'Update activation strategies'),
  def('DELETE_STRATEGY', 'root', 'Delete activation strategies'),
  def('CREATE_CONTEXT_FIELD', 'root', 'Create context fields'),
  def('UPDATE_CONTEXT_FIELD', 'root', 'Update context fields'),
  def('DELETE_CONTEXT_FIELD', 'root', 'Delete context fields'),
  def('CREATE_SEGMENT', 'root', 'Create segments'),
  def('UPDATE_SEGMENT', 'root', 'Update segments'),
  def('DELETE_SEGMENT', 'root', 'Delete segments'),
  def('CREATE_TAG_TYPE', 'root', 'Create tag types'),
  def('UPDATE_TAG_TYPE', 'root', 'Update tag types'),
  def('DELETE_TAG_TYPE', 'root', 'Delete tag types'),
  def('READ_ROLE', 'root', 'Read roles'),
  def('CREATE_FEATURE', 'project', 'Create features'),
  def('UPDATE_FEATURE', 'project', 'Update features'),
  def('DELETE_FEATURE', 'project', 'Delete features'),
  def('UPDATE_FEATURE_VARIANTS', 'project', 'Update feature variants'),
  def('MOVE_FEATURE_TOGGLE', 'project', 'Move features to another project'),
  def('UPDATE_PROJECT', 'project', 'Update the project'),
  def('DELETE_PROJECT', 'project', 'Delete the project'),
  def('READ_PROJECT_API_TOKEN', 'project', 'Read project API tokens'),
  def('CREATE_PROJECT_API_TOKEN', 'project', 'Create project API tokens'),
  def('DELETE_PROJECT_API_TOKEN', 'project', 'Delete project API tokens'),
  def('CREATE_FEATURE_STRATEGY', 'environment', 'Create activation strategies of a feature'),
  def('UPDATE_FEATURE_STRATEGY', 'environment', 'Update activation strategies of a feature'),
  def('DELETE_FEATURE_STRATEGY', 'environment', 'Delete activation strategies of a feature'),
  def('UPDATE_FEATURE_ENVIRONMENT', 'environment', 'Enable and disable features'),
  def(
    'UPDATE_FEATURE_ENVIRONMENT_VARIANTS',
    'environment',
    'Update variants of a feature in the environment',
  ),
];

const BY_NAME = new Map(PERMISSIONS.map((p) => [p.name, p]));

export function findPermission(name: string): PermissionDefinition | undefined {
  return BY_NAME.get(name);
}

/** The body of `GET /api/admin/permissions`. */
export function permissionCatalogue(environments: readonly string[]) {
  const of = (kind: PermissionKind) =>
    PERMISSIONS.filter((p) => p.kind === kind).map(({ name, displayName, assignable }) => ({
      name,
      displayName,
      assignable,
    }));
  return {
    version: 1,
    permissions: {
      root: of('root'),
      project: of('project'),
      environments: environments.map((name) => ({ name, permissions: of('environment') })),
    },
  };
}
