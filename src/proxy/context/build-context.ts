import type { Request } from 'express';
import type { Context } from 'unleash-client';
import { ValidationError } from '../../common/errors/http-errors';
import { contextSchema, describeIssues, type ClientContext } from './schemas';

export const ROOT_FIELDS = ['appName', 'environment', 'userId', 'sessionId', 'currentTime'] as const;
const ROOT = new Set<string>(ROOT_FIELDS);
const IGNORED = new Set(['remoteAddress']);
const PROPERTY_PARAM = /^properties\[([^\]]+)\]$/;

/** Strips the IPv4-mapped IPv6 prefix so IP strategies see `10.1.2.3`, not `::ffff:10.1.2.3`. */
function clientAddress(req: Request): string | undefined {
  const ip = req.ip ?? req.socket.remoteAddress;
  return ip?.startsWith('::ffff:') ? ip.slice(7) : ip;
}

/** The client-supplied part of a context from query parameters (GET). */
export function contextFromQuery(query: Request['query']): Omit<Context, 'remoteAddress'> {
  const context: Context = {};
  const properties: Record<string, string> = {};
  for (const [name, value] of Object.entries(query)) {
    if (Array.isArray(value))
      throw new ValidationError(`Query parameter "${name}" is given more than once; send it once`);
    if (typeof value !== 'string')
      throw new ValidationError(`Query parameter "${name}" must be a plain value`);
    if (value === '' || IGNORED.has(name)) continue;
    const property = PROPERTY_PARAM.exec(name);
    if (property) properties[property[1]] = value;
    else if (ROOT.has(name)) (context as Record<string, string>)[name] = value;
    else properties[name] = value;
  }
  if (Object.keys(properties).length > 0) context.properties = properties;
  return context;
}

/** The client-supplied part of a context from a POST body's `context`. */
export function contextFromBody(raw: unknown): Omit<Context, 'remoteAddress'> {
  if (raw === undefined || raw === null) return {};
  const parsed = contextSchema.safeParse(raw);
  if (!parsed.success)
    throw new ValidationError(`Invalid request body: ${describeIssues(parsed.error, 'context')}`);
  return normalise(parsed.data);
}

function normalise(input: ClientContext): Context {
  const context: Context = {};
  const properties: Record<string, string> = {};
  for (const [name, value] of Object.entries(input)) {
    if (name === 'properties' || IGNORED.has(name) || value === undefined || value === null || value === '')
      continue;
    if (typeof value !== 'string') continue;
    if (ROOT.has(name)) (context as Record<string, string>)[name] = value;
    else properties[name] = value;
  }
  for (const [name, value] of Object.entries(input.properties ?? {})) {
    if (value !== null && value !== '') properties[name] = value;
  }
  if (Object.keys(properties).length > 0) context.properties = properties;
  return context;
}

/** A copy for code we do not know (a custom strategy), so what it changes stays within its evaluation. */
export function ownCopy(context: Context): Context {
  return context.properties ? { ...context, properties: { ...context.properties } } : { ...context };
}

/**
 * The evaluation context: the client's fields, the configured environment (which clients cannot
 * override) and the address the proxy saw (never the client's own claim).
 */
export function completeContext(clientPart: Context, req: Request, environment: string | undefined): Context {
  return {
    ...clientPart,
    environment: environment ?? clientPart.environment ?? 'default',
    remoteAddress: clientAddress(req),
  };
}
