/**
 * Which endpoint a method and path name, matched as Express matches its routes: case-insensitive
 * literal segments, an optional trailing slash, `:name` for one non-empty segment (left encoded:
 * the gate decodes it after the key step). `HEAD` takes the `GET` route. Paths without
 * parameters are one map lookup; the few with parameters are tried in order after; last, the
 * prefixes (a path ending in `/*`: that path and everything below it), the longest first, for any
 * method when declared with `*`.
 */
export interface RouteMatch<T> {
  readonly target: T;
  /** The route's template as request series label it (`/proxy/all`, `/api/frontend/features/:name`). */
  readonly template: string;
  readonly params: Readonly<Record<string, string>>;
}

interface ParamRoute<T> {
  readonly method: string;
  readonly segments: ReadonlyArray<{ literal: string } | { param: string }>;
  readonly template: string;
  readonly target: T;
}

interface PrefixRoute<T> {
  readonly method: string;
  /** Lower-case, without the trailing slash ('' for the root). */
  readonly prefix: string;
  readonly template: string;
  readonly target: T;
}

const SLASH = 0x2f;
const NO_PARAMS: Readonly<Record<string, string>> = Object.freeze({});
/** The method of a route that takes every method. */
const ANY_METHOD = '*';

export class RouteTable<T> {
  /** Per method, per normalised path: a canonical path is found without building a key. */
  private readonly exact = new Map<string, Map<string, RouteMatch<T>>>();
  private readonly withParams: ParamRoute<T>[] = [];
  private readonly prefixes: PrefixRoute<T>[] = [];

  /**
   * Adds `method path`: a path like `/proxy/all` or `/ofrep/v1/evaluate/flags/:key`, or a prefix
   * like `/ofrep/*`; `method` `*` takes every method.
   */
  add(method: string, path: string, target: T): void {
    if (path.endsWith('/*')) {
      const prefix = normalise(path.slice(0, -2) || '/');
      this.prefixes.push({ method, prefix: prefix === '/' ? '' : prefix, template: path, target });
      this.prefixes.sort((a, b) => b.prefix.length - a.prefix.length);
      return;
    }
    const template = normalise(path);
    const parts = template.split('/').slice(1);
    if (!parts.some((p) => p.startsWith(':'))) {
      let paths = this.exact.get(method);
      if (paths === undefined) this.exact.set(method, (paths = new Map()));
      paths.set(template, { target, template, params: NO_PARAMS });
      return;
    }
    this.withParams.push({
      method,
      template,
      target,
      segments: parts.map((p) => (p.startsWith(':') ? { param: p.slice(1) } : { literal: p })),
    });
  }

  /** The route of a request's method and path (no query string), or undefined. */
  match(method: string, path: string): RouteMatch<T> | undefined {
    const asked = method === 'HEAD' ? 'GET' : method;
    const paths = this.exact.get(asked);
    // the path as sent first (the usual, canonical spelling), then normalised
    const found = paths?.get(path) ?? paths?.get(normalise(path));
    if (found !== undefined) return found;
    if (this.withParams.length > 0) {
      const parts = path.split('/').slice(1);
      if (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
      for (const route of this.withParams) {
        if (route.method !== asked || route.segments.length !== parts.length) continue;
        const params = matchSegments(route.segments, parts);
        if (params) return { target: route.target, template: route.template, params };
      }
    }
    return this.prefixMatch(asked, path);
  }

  private prefixMatch(method: string, path: string): RouteMatch<T> | undefined {
    if (this.prefixes.length === 0) return undefined;
    const lower = path.toLowerCase();
    for (const route of this.prefixes) {
      if (route.method !== ANY_METHOD && route.method !== method) continue;
      const { prefix } = route;
      if (
        lower.startsWith(prefix) &&
        (lower.length === prefix.length || lower.charCodeAt(prefix.length) === SLASH)
      )
        return { target: route.target, template: route.template, params: NO_PARAMS };
    }
    return undefined;
  }
}

function matchSegments(
  segments: ParamRoute<unknown>['segments'],
  parts: readonly string[],
): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i];
    const part = parts[i];
    if ('literal' in segment) {
      if (part.toLowerCase() !== segment.literal) return undefined;
    } else {
      if (part === '') return undefined;
      params[segment.param] = part;
    }
  }
  return params;
}

/** Lower-case literal segments, no trailing slash (`/` stays `/`); parameters keep their names. */
function normalise(path: string): string {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return trimmed
    .split('/')
    .map((p) => (p.startsWith(':') ? p : p.toLowerCase()))
    .join('/');
}
