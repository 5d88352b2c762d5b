import { ConfigError } from '../../common/config/resolve';
import type { RoleStore } from '../roles/role-store';
import type { AdminTokenSpec } from './admin-tokens';
import type { SeedToken, TokenStore } from './token-store';

/**
 * Stores the configured tokens (hashed). An admin token's role must be an existing root role;
 * otherwise start-up fails with a ConfigError naming it.
 */
export async function seedTokens(
  tokens: TokenStore,
  roles: RoleStore,
  clientTokens: readonly string[],
  adminTokens: readonly AdminTokenSpec[],
): Promise<void> {
  const seeds: SeedToken[] = clientTokens.map((secret) => ({ secret, type: 'client', roleId: null }));
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
    seeds.push({ secret: admin.token, type: 'admin', roleId: role.id });
  }
  if (problems.length > 0) throw new ConfigError(problems);
  await tokens.seedFromConfig(seeds);
}
