import type { OptionSpec } from '../config/resolve';
import { tell, type LevelMethod, type Logger } from './logger';
import { REDACTED, SecretRedactor } from './secret-redactor';

export { REDACTED } from './secret-redactor';

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** `https://user:pass@host` → `https://user:[redacted]@host`; anything else unchanged. */
function withoutUrlPassword(value: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/\s]*@/i.test(value)) return value;
  try {
    const url = new URL(value);
    if (url.password === '' && url.username === '') return value;
    if (url.password !== '') url.password = REDACTED;
    else url.username = REDACTED;
    return url.toString();
  } catch {
    return value;
  }
}

/** A JSON-safe, log-safe copy: functions and class instances are named, never serialised. */
function toLogValue(value: unknown, depth = 0): Json {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return withoutUrlPassword(value);
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'function') return `(function ${value.name || 'anonymous'})`;
  if (value instanceof RegExp) return String(value);
  if (Array.isArray(value)) return value.map((v) => toLogValue(v, depth + 1));
  if (typeof value === 'object') {
    const proto = Object.getPrototypeOf(value) as object | null;
    if (proto !== Object.prototype && proto !== null) {
      const ctor = (value as { constructor?: { name?: string } }).constructor?.name ?? 'object';
      const name = (value as { name?: unknown }).name;
      return typeof name === 'string' ? `(${ctor} "${name}")` : `(${ctor})`;
    }
    if (depth > 4) return '(…)';
    const out: Record<string, Json> = {};
    for (const [k, v] of Object.entries(value)) {
      if (v !== undefined) out[k] = toLogValue(v, depth + 1);
    }
    return out;
  }
  return String(value);
}

function redactPath(target: Record<string, Json>, key: string, whole: boolean): void {
  const parts = key.split('.');
  let node: Json = target;
  for (const part of parts.slice(0, -1)) {
    if (typeof node !== 'object' || node === null || Array.isArray(node)) return;
    node = node[part];
  }
  const last = parts[parts.length - 1];
  if (typeof node !== 'object' || node === null || Array.isArray(node) || !(last in node)) return;
  const value = node[last];
  if (value === null) return;
  if (whole && typeof value === 'object' && !Array.isArray(value)) {
    node[last] = Object.fromEntries(Object.keys(value).map((k) => [k, REDACTED]));
  } else {
    node[last] = Array.isArray(value) ? value.map(() => REDACTED) : REDACTED;
  }
}

/**
 * A copy of a resolved configuration that is safe to log: every option marked `secret: true` in
 * the option table is replaced by `[redacted]` (lists keep their length, so "3 keys configured" stays
 * visible), every object under `secretObjects` has all its values replaced (e.g. custom headers),
 * passwords in URLs are removed, and code objects (loggers, storage providers, strategies, enrichers)
 * appear by name only.
 */
export function redactConfig(
  config: object,
  specs: readonly OptionSpec[],
  secretObjects: readonly string[] = [],
): Record<string, Json> {
  const copy = toLogValue(config) as Record<string, Json>;
  for (const spec of specs) if (spec.secret) redactPath(copy, spec.key, false);
  for (const key of secretObjects) redactPath(copy, key, true);
  return copy;
}

/** Logs the effective configuration at debug level, redacted as `redactConfig` describes. */
export function logEffectiveConfig(
  logger: { debug(msg: string, fields?: Record<string, unknown>): void },
  config: { logger?: unknown },
  specs: readonly OptionSpec[],
  secretObjects: readonly string[] = [],
): void {
  const rest: Record<string, unknown> = { ...config };
  delete rest.logger;
  logger.debug('effective configuration', { config: redactConfig(rest, specs, secretObjects) });
}

/**
 * Wraps a logger so that no credential reaches a line, whatever code logs it (an upstream or SDK
 * message quoting a URL, a custom enricher's exception, a custom logger's fields): the message and
 * every field go through one `SecretRedactor` of the configured secrets.
 */
export function scrubbingLogger<L extends Logger>(
  logger: L,
  secrets: ReadonlyArray<string | undefined>,
): Logger {
  const redactor = new SecretRedactor(secrets);
  const wrap =
    (level: LevelMethod) =>
    (msg: string, fields?: Record<string, unknown>): void => {
      const clean = redactor.text(msg);
      if (fields === undefined) logger[level](clean);
      else logger[level](clean, redactor.value(fields) as Record<string, unknown>);
    };
  return {
    debug: wrap('debug'),
    info: wrap('info'),
    warn: wrap('warn'),
    error: wrap('error'),
    fatal: wrap('fatal'),
    notice: (msg: string, fields?: Record<string, unknown>): void =>
      tell(logger, redactor.text(msg), fields && (redactor.value(fields) as Record<string, unknown>)),
  };
}

/** The values of every option marked `secret: true`, read from resolved option values. */
export function secretValues(specs: readonly OptionSpec[], values: ReadonlyMap<string, unknown>): string[] {
  const out: string[] = [];
  for (const spec of specs) {
    if (!spec.secret) continue;
    const value = values.get(spec.key);
    const strings = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [];
    for (const v of strings) {
      if (typeof v !== 'string') continue;
      out.push(v);
      // `secret@environment` (Edge's pretrusted form): the secret alone is a secret too.
      const at = v.lastIndexOf('@');
      if (at > 0 && !v.includes('://')) out.push(v.slice(0, at));
    }
  }
  return out;
}

/**
 * The credentials of a URL's userinfo, as written and decoded: its password, or its user name when
 * it has no password (`http://token@host`); nothing for other values.
 */
export function urlPasswords(value: unknown): string[] {
  if (typeof value !== 'string' || !value.includes('@')) return [];
  try {
    const { password, username } = new URL(value);
    const secret = password !== '' ? password : username;
    return secret === '' ? [] : [secret, decodeURIComponent(secret)];
  } catch {
    return [];
  }
}
