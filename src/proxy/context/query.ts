import { unescape } from 'node:querystring';
import { ValidationError } from '../../common/errors/http-errors';
import { ContextBudget, type ContextLimits } from './limits';

/** The query fields that are the context's root fields; every other parameter is a property. */
export const ROOT_FIELDS = ['appName', 'environment', 'userId', 'sessionId', 'currentTime'] as const;
const ROOT = new Set<string>(ROOT_FIELDS);
/** Parameters that are read and dropped (the proxy fills `remoteAddress` itself). */
const IGNORED = new Set(['remoteAddress']);
const PROPERTY_PARAM = /^properties\[([^\]]+)\]$/;

/** The most parameters a query may carry: one per property, plus the root fields and `remoteAddress`. */
export function maxQueryParameters(limits: ContextLimits): number {
  return limits.maxProperties + ROOT_FIELDS.length + IGNORED.size;
}

/**
 * `+` is a space; a `%` that does not start an escape stays as it is (as `URLSearchParams` does).
 * Text with neither (most names and ids) is its own decoding, without a call into `unescape`.
 */
const decode = (text: string): string => {
  const plus = text.includes('+');
  if (!plus && !text.includes('%')) return text;
  return unescape(plus ? text.replace(/\+/g, ' ') : text);
};

/** A context's client part as a GET query gives it: root fields, and properties. */
export interface QueryContext {
  root: Record<string, string>;
  properties: Record<string, string> | undefined;
}

/** Where a parameter's field goes: a root field, a property, or nowhere (read and dropped). */
const enum Kind {
  Root,
  Property,
  Ignored,
}

/** One `name=value` pair, decoded: the field it gives, and of which kind. */
interface Parameter {
  readonly name: string;
  readonly value: string;
  readonly field: string;
  readonly kind: Kind;
}

function parameter(pair: string): Parameter {
  const eq = pair.indexOf('=');
  const name = decode(eq === -1 ? pair : pair.slice(0, eq));
  const value = eq === -1 ? '' : decode(pair.slice(eq + 1));
  const property = name.startsWith('properties[') ? PROPERTY_PARAM.exec(name) : null;
  if (property !== null) return { name, value, field: property[1], kind: Kind.Property };
  const kind = IGNORED.has(name) ? Kind.Ignored : ROOT.has(name) ? Kind.Root : Kind.Property;
  return { name, value, field: name, kind };
}

/**
 * Reads a query string into context fields in one pass. A parameter given twice is a 400 naming it,
 * also when two spellings name the same field (`plan` and `properties[plan]`); so is a parameter
 * past the limit, a field named `__proto__`/`constructor`/`prototype`, and anything over the context
 * limits. Empty values are dropped (after the checks).
 *
 * A field given before is found in the object it went to (`Object.hasOwn`), or, for the few kept in
 * neither (an empty value, an ignored parameter), in a short list; the spelling that gave it first
 * is looked up again only for the 400.
 */
export function readQuery(query: string, limits: ContextLimits): QueryContext {
  const root: Record<string, string> = {};
  let properties: Record<string, string> | undefined;
  if (query === '') return { root, properties };
  const budget = new ContextBudget(limits);
  const maxParameters = maxQueryParameters(limits);
  let unstored: string[] | undefined;
  let count = 0;
  let start = 0;
  while (start <= query.length) {
    let end = query.indexOf('&', start);
    if (end === -1) end = query.length;
    const pair = query.slice(start, end);
    start = end + 1;
    if (pair === '') continue;
    if (++count > maxParameters)
      throw new ValidationError(
        `The query has more than ${maxParameters} parameters (limit maxContextProperties / FLAGS_MAX_CONTEXT_PROPERTIES, plus the root fields)`,
      );
    const { name, value, field, kind } = parameter(pair);
    const stored = kind === Kind.Root ? root : kind === Kind.Property ? properties : undefined;
    if (
      (stored !== undefined && Object.hasOwn(stored, field)) ||
      unstored?.includes(`${kind}${field}`) === true
    )
      throw givenTwice(query, field, kind, name);
    if (kind === Kind.Ignored) {
      (unstored ??= []).push(`${kind}${field}`);
      continue;
    }
    budget.takeParameter(field, value, name, kind === Kind.Property);
    if (value === '') (unstored ??= []).push(`${kind}${field}`);
    else if (kind === Kind.Property) (properties ??= {})[field] = value;
    else root[field] = value;
  }
  return { root, properties };
}

/** The 400 for `name` giving a field of `query` given before, naming the parameter that gave it first. */
function givenTwice(query: string, field: string, kind: Kind, name: string): ValidationError {
  let first = name;
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const given = parameter(pair);
    if (given.field === field && given.kind === kind) {
      first = given.name;
      break;
    }
  }
  return new ValidationError(
    first === name
      ? `Query parameter "${name}" is given more than once; send it once`
      : `Query parameters "${first}" and "${name}" both give the property "${field}"; send it once`,
  );
}
