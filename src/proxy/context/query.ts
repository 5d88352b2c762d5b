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

/**
 * Reads a query string into context fields in one pass. A parameter given twice is a 400 naming it,
 * also when two spellings name the same field (`plan` and `properties[plan]`); so is a parameter
 * past the limit, a field named `__proto__`/`constructor`/`prototype`, and anything over the context
 * limits. Empty values are dropped (after the checks).
 */
export function readQuery(query: string, limits: ContextLimits): QueryContext {
  const root: Record<string, string> = {};
  let properties: Record<string, string> | undefined;
  if (query === '') return { root, properties };
  const budget = new ContextBudget(limits);
  const maxParameters = maxQueryParameters(limits);
  // who gave each field, by kind (`plan` and `properties[plan]` are the same field): keyed by the
  // field itself, whose hash the lookups share with the stores below
  const seenRoot = new Map<string, string>();
  let seenProperty: Map<string, string> | undefined;
  let seenIgnored: Map<string, string> | undefined;
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
    const eq = pair.indexOf('=');
    const name = decode(eq === -1 ? pair : pair.slice(0, eq));
    const value = eq === -1 ? '' : decode(pair.slice(eq + 1));
    const property = name.startsWith('properties[') ? PROPERTY_PARAM.exec(name) : null;
    const field = property ? property[1] : name;
    const ignored = property === null && IGNORED.has(name);
    const isProperty = property !== null || !ROOT.has(name);
    const seen = ignored ? (seenIgnored ??= new Map()) : isProperty ? (seenProperty ??= new Map()) : seenRoot;
    const first = seen.get(field);
    if (first !== undefined)
      throw new ValidationError(
        first === name
          ? `Query parameter "${name}" is given more than once; send it once`
          : `Query parameters "${first}" and "${name}" both give the property "${field}"; send it once`,
      );
    seen.set(field, name);
    if (ignored) continue;
    budget.takeParameter(field, value, name, isProperty);
    if (value === '') continue;
    if (isProperty) (properties ??= {})[field] = value;
    else root[field] = value;
  }
  return { root, properties };
}
