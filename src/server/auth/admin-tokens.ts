import { ParseError, list } from '../../common/config/parsers';

/** An admin token from configuration and the name of its root role. */
export interface AdminTokenSpec {
  token: string;
  role: string;
}

const ROLE_NAME = /^[A-Za-z][A-Za-z0-9 _-]*$/;

/**
 * Parses one admin token entry: `token` (role Admin) or `token:RoleName`. Only the part after the
 * last `:` that looks like a role name is taken as the role, so Unleash-style tokens such as
 * `*:*.abc123` stay whole.
 */
export function parseAdminTokenEntry(entry: string): AdminTokenSpec {
  const colon = entry.lastIndexOf(':');
  if (colon > 0) {
    const role = entry.slice(colon + 1).trim();
    if (ROLE_NAME.test(role)) return { token: entry.slice(0, colon).trim(), role };
  }
  return { token: entry, role: 'Admin' };
}

/** Parser for FLAGS_SERVER_ADMIN_TOKENS: a list of `token` or `token:RoleName`, or objects in code. */
export function adminTokens(value: unknown): AdminTokenSpec[] {
  if (Array.isArray(value) && value.some((v) => typeof v === 'object' && v !== null)) {
    return value.map((v) => {
      if (typeof v === 'string') return parseAdminTokenEntry(v.trim());
      const t = v as { token?: unknown; role?: unknown };
      if (typeof t.token !== 'string' || t.token.trim() === '') {
        throw new ParseError('each admin token object needs a non-empty string "token"');
      }
      const role = t.role === undefined ? 'Admin' : t.role;
      if (typeof role !== 'string' || !ROLE_NAME.test(role)) {
        throw new ParseError('an admin token role must be a role name such as Admin, Editor or Viewer');
      }
      return { token: t.token.trim(), role };
    });
  }
  const entries = list(value).map(parseAdminTokenEntry);
  if (entries.some((e) => e.token === '')) throw new ParseError('an entry has an empty token before ":"');
  return entries;
}
