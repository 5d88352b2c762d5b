import { ConfigError } from '../../common/config/resolve';
import type { RoleStore } from '../roles/role-store';
import type { AdminTokenSpec } from './admin-tokens';
import { tokenScope } from './token-format';
import type { SeedToken, TokenStore } from './token-store';

/**
 * Stores the configured tokens (hashed), client and frontend tokens with the scope their Unleash
 * format names. An admin token's role must be an existing root role;
 * otherwise start-up fails with a ConfigError naming it.
 */
export async function seedTokens(
  tokens: TokenStore,
  roles: RoleStore,
  clientTokens: readonly string[],
  adminTokens: readonly AdminTokenSpec[],
  frontendTokens: readonly string[] = [],
): Promise<void> {
  // An Unleash-format token names its environment and project; any other token is for every project.
  const scoped = (secret: string, type: 'client' | 'frontend'): SeedToken => {
    const scope = tokenScope(secret);
    return {
      secret,
      type,
      roleId: null,
      environment: scope?.environment ?? null,
      projects: scope?.projects ?? ['*'],
    };
  };
  const seeds: SeedToken[] = [
    ...clientTokens.map((secret) => scoped(secret, 'client')),
    ...frontendTokens.map((secret) => scoped(secret, 'frontend')),
  ];
  const problems: string[] = [];
  for (const admin of adminTokens) {
    const role = await roles.getByName(admin.role);
    if (!role || (role.type !== 'root' && role.type !== 'root-custom')) {
      const known = (await roles.list())
        .filter((r) => r.type === 'root' || r.type === 'root-custom')
        .map((r) => r.name);
      problems.push(
        `Invalid FLAGS_SERVER_ADMIN_TOKENS: role "${admin.role}" is not a root role (known: ${known.join(', ')})`,
      );
      continue;
    }
    seeds.push({ secret: admin.token, type: 'admin', roleId: role.id, environment: null, projects: ['*'] });
  }
  if (problems.length > 0) throw new ConfigError(problems);
  await tokens.seedFromConfig(seeds);
}
