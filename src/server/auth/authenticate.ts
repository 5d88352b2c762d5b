import type { Request, RequestHandler, Response } from 'express';
import { AuthenticationRequired, NoAccessError } from '../../common/errors/http-errors';
import { ADMIN } from '../roles/permissions';
import type { RoleStore } from '../roles/role-store';
import type { ApiTokenInfo, TokenStore } from './token-store';

/** The secret of `Authorization: <token>` or `Authorization: Bearer <token>`. */
export function presentedToken(req: Request): string | undefined {
  const header = req.headers.authorization?.trim();
  if (!header) return undefined;
  const match = /^Bearer\s+(.+)$/i.exec(header);
  const token = (match ? match[1] : header).trim();
  return token === '' ? undefined : token;
}

export function tokenOf(res: Response): ApiTokenInfo {
  return res.locals.apiToken as ApiTokenInfo;
}

/** The token types an API of flags-server asks for (frontend tokens are for the proxy). */
export type RequiredTokenType = 'client' | 'admin';

const WHERE: Record<RequiredTokenType, string> = {
  client: 'the client API (/api/client)',
  admin: 'the admin API (/api/admin)',
};

/** 401 without a known token, 403 for a token of the other type. Runs before any body is parsed. */
export function requireToken(tokens: TokenStore, type: RequiredTokenType): RequestHandler {
  return async (req, res, next) => {
    const secret = presentedToken(req);
    if (secret === undefined) {
      throw new AuthenticationRequired(
        `Authorization header with ${type === 'admin' ? 'an' : 'a'} ${type} API token is required`,
      );
    }
    const info = await tokens.lookup(secret);
    if (!info) throw new AuthenticationRequired('The API token in the Authorization header is not valid');
    if (info.type !== type) {
      throw new NoAccessError(
        `${info.type === 'admin' ? 'An' : 'A'} ${info.type} token cannot be used on ${WHERE[type]}; use ${type === 'admin' ? 'an' : 'a'} ${type} token`,
      );
    }
    res.locals.apiToken = info;
    next();
  };
}

/**
 * 403 unless the admin token's root role holds `permission` (ADMIN holds every permission). The
 * message names the permission, and the environment when the permission applies to one.
 */
export function requirePermission(
  roles: RoleStore,
  permission: string,
  action: string,
  environment?: string,
): RequestHandler {
  return async (_req, res, next) => {
    const { roleId } = tokenOf(res);
    const held = roleId === null ? [] : await roles.permissionsOf(roleId);
    const ok = held.some(
      (p) =>
        p.name === ADMIN ||
        (p.name === permission && (environment === undefined || p.environment === environment)),
    );
    if (!ok) {
      const role = roleId === null ? undefined : await roles.get(roleId);
      const where = environment === undefined ? '' : ` in environment "${environment}"`;
      throw new NoAccessError(
        `${action} needs the permission ${permission}${where}, which the token's role${role ? ` "${role.name}"` : ''} does not have`,
      );
    }
    next();
  };
}
