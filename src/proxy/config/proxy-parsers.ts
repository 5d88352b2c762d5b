import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import type { TagFilter } from '../upstream/sdk/types';
import { ParseError, type Parser, list, string } from '../../common/config/parsers';
import type { TrustProxy } from './types';
import { parseCidr, type CidrRange } from '../access/address-list';

/** `true`, `false`, a hop count, or IP/CIDR entries (comma-separated), as Express's `trust proxy` takes. */
export const trustProxy: Parser<TrustProxy> = (value) => {
  if (
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0)
  ) {
    return value;
  }
  const entries = typeof value === 'string' || Array.isArray(value) ? list(value) : [];
  if (entries.length === 1) {
    const v = entries[0].toLowerCase();
    if (v === 'true' || v === 'false') return v === 'true';
    if (/^\d+$/.test(v)) return Number(v);
  }
  const named = new Set(['loopback', 'linklocal', 'uniquelocal']);
  const valid = (entry: string) => {
    if (named.has(entry)) return true;
    const [ip, bits, rest] = entry.split('/');
    if (rest !== undefined || isIP(ip) === 0) return false;
    if (bits === undefined) return true;
    const max = isIP(ip) === 4 ? 32 : 128;
    return /^\d+$/.test(bits) && Number(bits) <= max;
  };
  if (entries.length > 0 && entries.every(valid)) return entries;
  throw new ParseError(
    'must be true, false, a hop count, or comma-separated IP addresses/CIDR ranges (e.g. 10.0.0.0/8,loopback)',
  );
};

/** `name:value,name2:value2` (or an array of `{name, value}` in code). */
export const tags: Parser<TagFilter[]> = (value) => {
  if (Array.isArray(value) && value.every((t) => typeof t === 'object' && t !== null)) {
    return value.map((t: { name?: unknown; value?: unknown }) => ({
      name: string(t.name),
      value: string(t.value),
    }));
  }
  return list(value).map((entry) => {
    const idx = entry.indexOf(':');
    if (idx <= 0 || idx === entry.length - 1) {
      throw new ParseError(`entry "${entry}" must be tagName:tagValue (format name:value,name2:value2)`);
    }
    return { name: entry.slice(0, idx).trim(), value: entry.slice(idx + 1).trim() };
  });
};

/** '' or '/base/path': leading slash added, trailing slashes removed. */
export const basePath: Parser<string> = (value) => {
  if (typeof value !== 'string') throw new ParseError('must be a path such as /base/path');
  const trimmed = value.trim().replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return '';
  if (!/^[A-Za-z0-9._~\-/]+$/.test(trimmed)) throw new ParseError('must be a URL path such as /base/path');
  return `/${trimmed}`;
};

/** A list of plugin file paths (from the environment) or, in code, paths and instances. */
export function pluginList<T>(isInstance: (v: unknown) => v is T, what: string): Parser<Array<string | T>> {
  return (value) => {
    if (typeof value === 'string') return list(value);
    if (Array.isArray(value)) {
      return value.map((v) => {
        if (typeof v === 'string') return v;
        if (isInstance(v)) return v;
        throw new ParseError(`entries must be file paths or ${what}`);
      });
    }
    throw new ParseError(
      `must be a comma-separated list of file paths (or an array of paths or ${what} in code)`,
    );
  };
}

/** CORS origin: `*`, one origin, or a comma-separated list; in code also booleans and RegExps. */
export const corsOrigin: Parser<string | string[] | boolean | RegExp> = (value) => {
  if (typeof value === 'boolean' || value instanceof RegExp) return value;
  const entries = list(value);
  if (entries.length === 0)
    throw new ParseError('must be *, an origin URL or a comma-separated list of origins');
  if (entries.includes('*')) return '*';
  return entries.length === 1 ? entries[0] : entries;
};

export const headerName: Parser<string> = (value) => {
  const s = string(value).toLowerCase();
  if (!/^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(s)) throw new ParseError('must be a valid HTTP header name');
  return s;
};

/** A positive whole number of worker processes, or `auto` (one per CPU). */
export const workerCount: Parser<number> = (value) => {
  if (typeof value === 'string' && value.trim().toLowerCase() === 'auto') return availableParallelism();
  const n = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) {
    throw new ParseError('must be a positive whole number of worker processes, or auto (one per CPU)');
  }
  return n;
};

/** A redis:// or rediss:// URL with a host. The message never repeats the value (it may hold a password). */
export const redisUrl: Parser<string> = (value) => {
  const problem = 'must be a redis:// or rediss:// URL, e.g. redis://:password@localhost:6379/0';
  if (typeof value !== 'string') throw new ParseError(problem);
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new ParseError(problem);
  }
  if ((url.protocol !== 'redis:' && url.protocol !== 'rediss:') || url.hostname === '') {
    throw new ParseError(problem);
  }
  if (url.pathname !== '' && url.pathname !== '/' && !/^\/\d+$/.test(url.pathname)) {
    throw new ParseError(`${problem} (the path, when given, is a database number)`);
  }
  return value.trim();
};

/** Comma-separated CIDRs (IPv4 or IPv6; a bare address is one host), as Unleash Edge's ALLOW_LIST / DENY_LIST. */
export const cidrList: Parser<CidrRange[]> = (value) =>
  list(value).map((entry) => {
    const range = parseCidr(entry);
    if (range === undefined) {
      throw new ParseError(
        `entry "${entry}" must be a CIDR such as 10.0.0.0/8 or 2001:db8::/32, or one address`,
      );
    }
    return range;
  });

const HEADER_TOKEN = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Unleash Edge's CUSTOM_CLIENT_HEADERS: `Name: value,Name2: value2` (curl's header form; a value may
 * hold colons, not commas). In code also an object of names to values. The message never repeats
 * a value: headers like these carry API keys.
 */
export const headerPairs: Parser<Record<string, string>> = (value) => {
  const entries: Array<[string, string]> =
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, typeof v === 'string' ? v : ''])
      : list(value).map((entry) => {
          const idx = entry.indexOf(':');
          return idx < 0 ? [entry, ''] : [entry.slice(0, idx).trim(), entry.slice(idx + 1).trim()];
        });
  const headers: Record<string, string> = {};
  for (const [name, headerValue] of entries) {
    if (!HEADER_TOKEN.test(name) || headerValue === '' || !HEADER_VALUE.test(headerValue)) {
      throw new ParseError(
        'must be comma-separated headers in the form Name: value (e.g. X-Api-Key: <key>,X-Team: web)',
      );
    }
    headers[name] = headerValue;
  }
  return headers;
};
