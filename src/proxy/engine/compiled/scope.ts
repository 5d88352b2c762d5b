import type { Context } from 'unleash-client';

/**
 * A context field's value as `unleash-client` 6 reads it for constraints, custom stickiness and
 * overrides (`helpers.resolveContextValue`): the root field, else the property of that name, as a
 * string; undefined when both are missing or null.
 */
export function contextValue(context: Context, field: string): string | undefined {
  const value: unknown =
    (context as Record<string, unknown>)[field] ??
    (context.properties as Record<string, unknown> | undefined)?.[field];
  return value !== undefined && value !== null ? String(value) : undefined;
}

const TRUE = 1;
const FALSE = 2;

/**
 * What one request computes once and shares among every compiled toggle it evaluates: the result
 * of each distinct check of the revision (`Checks`), by check id. A request is evaluated
 * synchronously from `begin` to its last toggle, so one scope per revision serves every request;
 * `begin` forgets the previous request's results (by counting requests, not by clearing).
 */
export class RequestScope {
  private stamps: Uint32Array;
  private results: Uint8Array;
  private request = 0;
  context: Context = {};

  constructor(checks: number) {
    this.stamps = new Uint32Array(checks);
    this.results = new Uint8Array(checks);
  }

  /** Starts a request with `context`. */
  begin(context: Context): void {
    this.context = context;
    this.request += 1;
    if (this.request === 0xffffffff) {
      this.stamps.fill(0);
      this.request = 1;
    }
  }

  /** The result of check `id` for this request, computed by `check` the first time. */
  shared(id: number, check: (context: Context) => boolean): boolean {
    if (id >= this.stamps.length) this.grow(id + 1);
    if (this.stamps[id] === this.request) return this.results[id] === TRUE;
    const result = check(this.context);
    this.stamps[id] = this.request;
    this.results[id] = result ? TRUE : FALSE;
    return result;
  }

  private grow(size: number): void {
    const stamps = new Uint32Array(Math.max(size, this.stamps.length * 2));
    stamps.set(this.stamps);
    const results = new Uint8Array(stamps.length);
    results.set(this.results);
    this.stamps = stamps;
    this.results = results;
  }
}
