export { createFlagServer, type FlagServer, type FlagServerStores } from './app';
export { startFlagServer, type RunningFlagServer, type StartOptions } from './start';
export { parseServerConfig } from './config/parse-config';
export {
  SERVER_OPTIONS,
  EXAMPLE_FEATURES_FILE,
  serverConfigMarkdownTable,
  serverEnvExample,
} from './config/options';
export type { FlagServerOptions, ServerConfig } from './config/types';
export type { AdminTokenSpec } from './auth/admin-tokens';
export type { FeatureSnapshot } from './features/feature-source';
export { ADMIN, PERMISSIONS, type PermissionDefinition, type PermissionKind } from './roles/permissions';
export type { Role, RolePermission, RoleType } from './roles/role-store';
