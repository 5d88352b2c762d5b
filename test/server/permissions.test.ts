import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ValidationError } from '../../src/common/errors/http-errors';
import { PERMISSIONS, findPermission } from '../../src/server/roles/permissions';
import { validateRolePermissions } from '../../src/server/roles/validate-permissions';

const ENVS = ['development', 'production'];

describe('validateRolePermissions', () => {
  it('keeps each permission once and drops an environment that does not apply', () => {
    expect(
      validateRolePermissions(
        'custom',
        [
          { name: 'CREATE_FEATURE', environment: 'production' },
          { name: 'CREATE_FEATURE' },
          { name: 'UPDATE_FEATURE_STRATEGY', environment: 'production' },
          { name: 'UPDATE_FEATURE_STRATEGY', environment: 'production' },
        ],
        ENVS,
      ),
    ).toEqual([{ name: 'CREATE_FEATURE' }, { name: 'UPDATE_FEATURE_STRATEGY', environment: 'production' }]);
  });

  it('throws a ValidationError naming the offending permission', () => {
    expect(() =>
      validateRolePermissions('custom', [{ name: 'CREATE_FEATURE' }, { name: 'NOPE' }], ENVS),
    ).toThrow(ValidationError);
    expect(() =>
      validateRolePermissions('custom', [{ name: 'CREATE_FEATURE' }, { name: 'NOPE' }], ENVS),
    ).toThrow(/permissions\[1\]\.name: unknown permission "NOPE"/);
    expect(() =>
      validateRolePermissions(
        'root-custom',
        [{ name: 'UPDATE_FEATURE_ENVIRONMENT', environment: 'development' }],
        ENVS,
      ),
    ).toThrow(/environment permission; a root-custom role takes only root permissions/);
  });
});

describe('the permission catalogue', () => {
  it('names each permission once, with a kind', () => {
    const names = PERMISSIONS.map((p) => p.name);
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(PERMISSIONS.map((p) => p.kind))).toEqual(new Set(['root', 'project', 'environment']));
  });

  it('knows every permission the built-in roles of the first migration hold', () => {
    const sql = readFileSync(
      path.join(__dirname, '..', '..', 'src', 'server', 'migrations', '001_roles_and_tokens.sql'),
      'utf8',
    );
    const granted = [...sql.matchAll(/\(\d, '([A-Z_]+)'\)/g)].map((m) => m[1]);
    expect(granted.length).toBeGreaterThan(10);
    for (const name of granted) expect(findPermission(name)).toBeDefined();
  });
});
