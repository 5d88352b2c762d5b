import { NameExistsError } from '../../common/errors/http-errors';
import { sqlState, type Db } from '../storage/db';
import { roleNameKeys } from './name-key';

export type RoleType = 'root' | 'root-custom' | 'project' | 'custom';

/** A role as the admin API shows it (spec 2.7). `project` is null when the role is not bound to one. */
export interface Role {
  id: number;
  type: RoleType;
  name: string;
  description: string;
  project: string | null;
}

export interface RolePermission {
  name: string;
  /** Set for environment permissions only. */
  environment?: string;
}

export interface NewRole {
  name: string;
  description: string;
  type: 'root-custom' | 'custom';
  permissions: RolePermission[];
}

export interface RoleStore {
  /**
   * Creates a role with its permissions; throws NameExistsError when a role with the same name key
   * exists (see name-key.ts: case, invisible and confusable characters and blanks ignored).
   */
  create(role: NewRole): Promise<Role>;
  get(id: number): Promise<Role | undefined>;
  getByName(name: string): Promise<Role | undefined>;
  list(): Promise<Role[]>;
  permissionsOf(roleId: number): Promise<RolePermission[]>;
  /**
   * Gives roles stored before the current name keys (migrations 003, 005) their keys, in id order;
   * answers the names whose key another role already holds (left without keys, so the older role
   * keeps the name).
   */
  fillNameKeys(): Promise<string[]>;
}

interface RoleRow {
  id: number;
  type: RoleType;
  name: string;
  description: string;
  project: string | null;
}

const COLUMNS = 'id, type, name, description, project';

function toRole(row: RoleRow): Role {
  return {
    id: Number(row.id),
    type: row.type,
    name: row.name,
    description: row.description,
    project: row.project,
  };
}

/** The PostgreSQL role store; runs on `pg` and PGlite alike. */
export class PgRoleStore implements RoleStore {
  constructor(private readonly db: Db) {}

  async create(role: NewRole): Promise<Role> {
    try {
      return await this.db.transaction(async (tx) => {
        const keys = roleNameKeys(role.name);
        const [row] = await tx.query<RoleRow>(
          `INSERT INTO roles (name, name_key, name_key_cased, description, type) VALUES ($1, $2, $3, $4, $5)
           RETURNING ${COLUMNS}`,
          [role.name, keys.folded, keys.cased, role.description, role.type],
        );
        const created = toRole(row);
        if (role.permissions.length > 0) {
          await tx.query(
            `INSERT INTO role_permissions (role_id, permission, environment)
             SELECT $1, p.name, coalesce(p.environment, '') FROM jsonb_to_recordset($2::jsonb) AS p(name text, environment text)
             ON CONFLICT DO NOTHING`,
            [created.id, JSON.stringify(role.permissions)],
          );
        }
        return created;
      });
    } catch (err) {
      if (sqlState(err) === '23505') {
        const existing = await this.getByName(role.name);
        const which = existing ? ` as role "${existing.name}" (id ${existing.id})` : '';
        throw new NameExistsError(
          `A role named "${role.name}" already exists${which} (names are compared ignoring case, blanks, invisible and look-alike characters)`,
        );
      }
      throw err;
    }
  }

  async get(id: number): Promise<Role | undefined> {
    const rows = await this.db.query<RoleRow>(`SELECT ${COLUMNS} FROM roles WHERE id = $1`, [id]);
    return rows[0] && toRole(rows[0]);
  }

  async getByName(name: string): Promise<Role | undefined> {
    const keys = roleNameKeys(name);
    const rows = await this.db.query<RoleRow>(
      `SELECT ${COLUMNS} FROM roles
       WHERE name_key = $1 OR name_key_cased = $2 OR (name_key IS NULL AND lower(btrim(name)) = lower(btrim($3)))
       ORDER BY id LIMIT 1`,
      [keys.folded, keys.cased, name],
    );
    return rows[0] && toRole(rows[0]);
  }

  async list(): Promise<Role[]> {
    return (await this.db.query<RoleRow>(`SELECT ${COLUMNS} FROM roles ORDER BY id`)).map(toRole);
  }

  async permissionsOf(roleId: number): Promise<RolePermission[]> {
    const rows = await this.db.query<{ permission: string; environment: string }>(
      'SELECT permission, environment FROM role_permissions WHERE role_id = $1 ORDER BY permission, environment',
      [roleId],
    );
    return rows.map((r) =>
      r.environment === '' ? { name: r.permission } : { name: r.permission, environment: r.environment },
    );
  }

  async fillNameKeys(): Promise<string[]> {
    // name_key_cased is written with name_key by this version only: a row without it has no keys yet,
    // or keys of an older version (a role created by an older server during a rolling upgrade).
    const rows = await this.db.query<{ id: number; name: string }>(
      'SELECT id, name FROM roles WHERE name_key_cased IS NULL ORDER BY id',
    );
    const clashes: string[] = [];
    for (const row of rows) {
      const keys = roleNameKeys(row.name);
      let updated: { id: number } | undefined;
      try {
        [updated] = await this.db.query<{ id: number }>(
          `UPDATE roles SET name_key = $2, name_key_cased = $3 WHERE id = $1
             AND NOT EXISTS (SELECT 1 FROM roles r WHERE (r.name_key = $2 OR r.name_key_cased = $3) AND r.id <> $1)
           RETURNING id`,
          [row.id, keys.folded, keys.cased],
        );
      } catch (err) {
        // Another server starting on the same database gave this key to another role first.
        if (sqlState(err) !== '23505') throw err;
      }
      if (!updated) {
        // Left without keys (an older version's key would no longer match what it is compared with).
        await this.db.query('UPDATE roles SET name_key = NULL WHERE id = $1 AND name_key_cased IS NULL', [
          row.id,
        ]);
        clashes.push(row.name);
      }
    }
    return clashes;
  }
}
