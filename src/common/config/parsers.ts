/**
 * Value parsers shared by both programs' configuration. Each accepts a raw environment string or a
 * value given in code and returns the typed value, or throws a ParseError whose message says what
 * form is accepted.
 */
export class ParseError extends Error {}

export type Parser<T> = (value: unknown) => T;

export const string: Parser<string> = (value) => {
  if (typeof value !== 'string' || value.trim() === '') throw new ParseError('must be a non-empty string');
  return value.trim();
};

const TRUE = new Set(['true', '1', 'yes']);
const FALSE = new Set(['false', '0', 'no']);

export const boolean: Parser<boolean> = (value) => {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    const v = value.trim().toLowerCase();
    if (TRUE.has(v)) return true;
    if (FALSE.has(v)) return false;
  }
  throw new ParseError('must be a boolean: true/false, 1/0 or yes/no');
};

export const wholeNumber: Parser<number> = (value) => {
  const n = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
    throw new ParseError('must be a whole non-negative number, e.g. 5000');
  }
  return n;
};

export const port: Parser<number> = (value) => {
  const n = wholeNumber(value);
  if (n > 65535) throw new ParseError('must be a port number from 0 to 65535');
  return n;
};

export const list: Parser<string[]> = (value) => {
  const items = Array.isArray(value) ? value : typeof value === 'string' ? value.split(',') : undefined;
  if (!items || !items.every((i): i is string => typeof i === 'string')) {
    throw new ParseError('must be a comma-separated list (or an array of strings in code)');
  }
  return items.map((i) => i.trim()).filter((i) => i !== '');
};

export const nonEmptyList: Parser<string[]> = (value) => {
  const items = list(value);
  if (items.length === 0) throw new ParseError('must list at least one entry, comma-separated');
  return items;
};

export const httpUrl: Parser<string> = (value) => {
  const s = string(value);
  let url: URL;
  try {
    url = new URL(s);
  } catch {
    throw new ParseError('must be an absolute URL, e.g. http://localhost:4242/api');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ParseError('must be an http:// or https:// URL');
  }
  return s;
};

export function oneOf<T extends string>(values: readonly T[]): Parser<T> {
  return (value) => {
    const s = typeof value === 'string' ? value.trim().toLowerCase() : value;
    if (typeof s === 'string' && (values as readonly string[]).includes(s)) return s as T;
    throw new ParseError(`must be one of ${values.join(', ')}`);
  };
}
