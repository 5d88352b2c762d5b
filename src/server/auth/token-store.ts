import { createHash } from 'node:crypto';
import type { Db } from '../storage/db';

/** `client`: server-side SDKs and the proxy; `frontend`: frontend SDKs through the proxy; `admin`: the admin API. */
export type TokenType = 'client' | 'frontend' | 'admin';

/** What a presented token is: its type, its scope and, for admin tokens, the id of its root role. */
export interface ApiTokenInfo {
  type: TokenType;
  roleId: number | null;
  /** Null for a token that names no environment (not in Unleash's format). */
  environment: string | null;
  /** `["*"]` for every project. */
  projects: string[];
}

export interface SeedToken {
  secret: string;
  type: TokenType;
  roleId: number | null;
  environment: string | null;
  projects: string[];
}

export interface NewApiToken {
  secret: string;
  type: 'client' | 'frontend';
  environment: string;
  projects: string[];
  tokenName: string | null;
}

/** A token `validate` confirms, with the secret as it was presented. */
export interface ValidatedToken extends Omit<ApiTokenInfo, 'roleId'> {
  token: string;
}

export interface TokenStore {
  /** Makes the configured tokens exactly the tokens from configuration (upsert, and removal of dropped ones). */
  seedFromConfig(tokens: readonly SeedToken[]): Promise<void>;
  /** The token with this secret, if any. */
  lookup(secret: string): Promise<ApiTokenInfo | undefined>;
  /** Stores a token created on the admin API. */
  create(token: NewApiToken): Promise<Date>;
  /** Revokes a client or frontend token; false when there is none with this secret. */
  revoke(secret: string): Promise<boolean>;
  /** The known tokens among `secrets`, each once, in the order given. */
  validate(secrets: readonly string[]): Promise<ValidatedToken[]>;
}

/** Tokens are stored as sha256 hashes; the secret itself never reaches the database. */
export function hashToken(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

interface TokenRow {
  secret_hash: string;
  type: TokenType;
  role_id: number | null;
  environment: string | null;
  projects: string[] | string;
}

function toInfo(row: TokenRow): ApiTokenInfo {
  return {
    type: row.type,
    roleId: row.role_id === null ? null : Number(row.role_id),
    environment: row.environment,
    projects: typeof row.projects === 'string' ? (JSON.parse(row.projects) as string[]) : row.projects,
  };
}

export class PgTokenStore implements TokenStore {
  constructor(private readonly db: Db) {}

  async seedFromConfig(tokens: readonly SeedToken[]): Promise<void> {
    const byHash = new Map(tokens.map((t) => [hashToken(t.secret), t]));
    const rows = [...byHash].map(([hash, t]) => ({
      hash,
      type: t.type,
      role_id: t.roleId,
      environment: t.environment,
      projects: t.projects,
    }));
    await this.db.transaction(async (tx) => {
      await tx.query(
        `DELETE FROM api_tokens WHERE source = 'config'
           AND secret_hash NOT IN (SELECT hash FROM jsonb_to_recordset($1::jsonb) AS t(hash text))`,
        [JSON.stringify(rows)],
      );
      await tx.query(
        `INSERT INTO api_tokens (secret_hash, type, role_id, environment, projects, source)
         SELECT t.hash, t.type, t.role_id, t.environment, t.projects, 'config'
         FROM jsonb_to_recordset($1::jsonb) AS t(hash text, type text, role_id int, environment text, projects jsonb)
         ON CONFLICT (secret_hash) DO UPDATE SET type = excluded.type, role_id = excluded.role_id,
           environment = excluded.environment, projects = excluded.projects, source = 'config'`,
        [JSON.stringify(rows)],
      );
    });
  }

  async lookup(secret: string): Promise<ApiTokenInfo | undefined> {
    const rows = await this.db.query<TokenRow>(
      'SELECT secret_hash, type, role_id, environment, projects FROM api_tokens WHERE secret_hash = $1',
      [hashToken(secret)],
    );
    return rows[0] && toInfo(rows[0]);
  }

  async create(token: NewApiToken): Promise<Date> {
    const [row] = await this.db.query<{ created_at: Date | string }>(
      `INSERT INTO api_tokens (secret_hash, type, role_id, environment, projects, token_name, source)
       VALUES ($1, $2, NULL, $3, $4::jsonb, $5, 'admin-api') RETURNING created_at`,
      [
        hashToken(token.secret),
        token.type,
        token.environment,
        JSON.stringify(token.projects),
        token.tokenName,
      ],
    );
    return new Date(row.created_at);
  }

  async revoke(secret: string): Promise<boolean> {
    const rows = await this.db.query(
      `DELETE FROM api_tokens WHERE secret_hash = $1 AND type <> 'admin' RETURNING secret_hash`,
      [hashToken(secret)],
    );
    return rows.length > 0;
  }

  async validate(secrets: readonly string[]): Promise<ValidatedToken[]> {
    const unique = [...new Set(secrets)];
    if (unique.length === 0) return [];
    const hashes = unique.map(hashToken);
    const rows = await this.db.query<TokenRow>(
      `SELECT secret_hash, type, role_id, environment, projects FROM api_tokens
       WHERE secret_hash IN (SELECT jsonb_array_elements_text($1::jsonb))`,
      [JSON.stringify(hashes)],
    );
    const byHash = new Map(rows.map((r) => [r.secret_hash, toInfo(r)]));
    return unique.flatMap((token, i) => {
      const info = byHash.get(hashes[i]);
      if (!info) return [];
      const { roleId: _roleId, ...scope } = info;
      return [{ token, ...scope }];
    });
  }
}
