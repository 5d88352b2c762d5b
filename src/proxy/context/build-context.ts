import type { Request } from 'express';
import type { Context } from 'unleash-client';
import { ValidationError } from '../../common/errors/http-errors';
import { copyFields } from './copy-fields';
import { ContextBudget, requireDataName, type ContextLimits } from './limits';
import { readQuery, ROOT_FIELDS } from './query';
import { contextSchema, describeIssues, isPlainContext } from './schemas';

export { ROOT_FIELDS } from './query';
const ROOT = new Set<string>(ROOT_FIELDS);
const IGNORED = new Set(['remoteAddress']);

/** Strips the IPv4-mapped IPv6 prefix so IP strategies see `10.1.2.3`, not `::ffff:10.1.2.3`. */
function clientAddress(req: Request): string | undefined {
  const ip = req.ip ?? req.socket.remoteAddress;
  return ip?.startsWith('::ffff:') ? ip.slice(7) : ip;
}

/** The client-supplied part of a context from a query string (GET), within the context limits. */
export function contextFromQuery(query: string, limits: ContextLimits): Omit<Context, 'remoteAddress'> {
  const { root, properties } = readQuery(query, limits);
  const context: Context = root;
  if (properties !== undefined) context.properties = properties;
  return context;
}

/**
 * Refuses, before any schema runs, a context over the limits or with a field named `__proto__`,
 * `constructor` or `prototype` (at the root or in `properties`; anything deeper is a nested object,
 * which the schema refuses). Values of the wrong type are left to the schema, which names them.
 */
export function checkContextInput(raw: unknown, limits: ContextLimits, root = 'context'): void {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return;
  const budget = new ContextBudget(limits);
  const record = raw as Record<string, unknown>;
  const given = record.properties;
  const properties =
    typeof given === 'object' && given !== null && !Array.isArray(given)
      ? (given as Record<string, unknown>)
      : {};
  for (const name of Object.keys(record)) {
    const value = record[name];
    const field = `${root}.${name}`;
    if (name === 'properties' && typeof value === 'object' && value !== null && !Array.isArray(value)) {
      const props = value as Record<string, unknown>;
      for (const prop of Object.keys(props)) {
        const v = props[prop];
        budget.take(prop, typeof v === 'string' ? v : '', `${field}.${prop}`, true);
      }
      continue;
    }
    if (name === 'properties' || IGNORED.has(name)) {
      requireDataName(name, field);
      continue;
    }
    const isProperty = !ROOT.has(name);
    if (isProperty && Object.hasOwn(properties, name))
      throw new ValidationError(`${field} is given twice (also as ${root}.properties.${name}); send it once`);
    budget.take(name, typeof value === 'string' ? value : '', field, isProperty);
  }
}

/** The client-supplied part of a context from a POST body's `context`, within the context limits. */
export function contextFromBody(raw: unknown, limits: ContextLimits): Omit<Context, 'remoteAddress'> {
  if (raw === undefined || raw === null) return {};
  checkContextInput(raw, limits);
  if (isPlainContext(raw)) return normalise(raw);
  const parsed = contextSchema.safeParse(raw);
  if (!parsed.success)
    throw new ValidationError(`Invalid request body: ${describeIssues(parsed.error, 'context')}`);
  return normalise(parsed.data);
}

/** A context as `contextSchema` (or a schema extending it) gives it. */
interface AcceptedContext {
  readonly [name: string]: unknown;
  readonly properties?: Readonly<Record<string, string | null>> | null;
}

/** A context the schema has accepted (after `checkContextInput`), as the SDK takes it. */
export function normalise(input: AcceptedContext): Context {
  const context: Context = {};
  let properties: Record<string, string> | undefined;
  for (const name of Object.keys(input)) {
    const value: unknown = input[name];
    if (name === 'properties' || IGNORED.has(name) || typeof value !== 'string' || value === '') continue;
    if (ROOT.has(name)) (context as Record<string, string>)[name] = value;
    else (properties ??= {})[name] = value;
  }
  const given = input.properties;
  if (given) {
    for (const name of Object.keys(given)) {
      const value = given[name];
      if (value !== null && value !== '') (properties ??= {})[name] = value;
    }
  }
  if (properties !== undefined) context.properties = properties;
  return context;
}

/** A copy for code we do not know (a custom strategy), so what it changes stays within its evaluation. */
export function ownCopy(context: Context): Context {
  const copy = copyFields<Context>({}, context);
  if (context.properties) copy.properties = copyFields({}, context.properties);
  return copy;
}

/**
 * The evaluation context: the client's fields, the configured environment (which clients cannot
 * override) and the address the proxy saw (never the client's own claim).
 */
export function completeContext(clientPart: Context, req: Request, environment: string | undefined): Context {
  // `{ ...clientPart, environment, remoteAddress }` (`copy-fields.ts` says why not the spread)
  const context = copyFields<Context>({}, clientPart);
  context.environment = environment ?? clientPart.environment ?? 'default';
  context.remoteAddress = clientAddress(req);
  return context;
}
