import { createHash } from 'node:crypto';
import type { Db } from '../storage/db';

export type TokenType = 'client' | 'admin';

/** What a presented token is: its type and, for admin tokens, the id of its root role. */
export interface ApiTokenInfo {
  type: TokenType;
  roleId: number | null;
}

export interface SeedToken {
  secret: string;
  type: TokenType;
  roleId: number | null;
}

export interface TokenStore {
  /** Makes the configured tokens exactly the tokens from configuration (upsert, and removal of dropped ones). */
  seedFromConfig(tokens: readonly SeedToken[]): Promise<void>;
  /** The token with this secret, if any. */
  lookup(secret: string): Promise<ApiTokenInfo | undefined>;
}

/** Tokens are stored as sha256 hashes; the secret itself never reaches the database. */
export function hashToken(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export class PgTokenStore implements TokenStore {
  constructor(private readonly db: Db) {}

  async seedFromConfig(tokens: readonly SeedToken[]): Promise<void> {
    const byHash = new Map(tokens.map((t) => [hashToken(t.secret), t]));
    const rows = [...byHash].map(([hash, t]) => ({ hash, type: t.type, role_id: t.roleId }));
    await this.db.transaction(async (tx) => {
      await tx.query(
        `DELETE FROM api_tokens WHERE source = 'config'
           AND secret_hash NOT IN (SELECT hash FROM jsonb_to_recordset($1::jsonb) AS t(hash text))`,
        [JSON.stringify(rows)],
      );
      await tx.query(
        `INSERT INTO api_tokens (secret_hash, type, role_id, source)
         SELECT t.hash, t.type, t.role_id, 'config' FROM jsonb_to_recordset($1::jsonb) AS t(hash text, type text, role_id int)
         ON CONFLICT (secret_hash) DO UPDATE SET type = excluded.type, role_id = excluded.role_id`,
        [JSON.stringify(rows)],
      );
    });
  }

  async lookup(secret: string): Promise<ApiTokenInfo | undefined> {
    const rows = await this.db.query<{ type: TokenType; role_id: number | null }>(
      'SELECT type, role_id FROM api_tokens WHERE secret_hash = $1',
      [hashToken(secret)],
    );
    const row = rows[0];
    return row && { type: row.type, roleId: row.role_id === null ? null : Number(row.role_id) };
  }
}
