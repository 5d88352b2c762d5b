import type { ServerResponse } from 'node:http';

/** `x-client-key` → `X-Client-Key`: a header name as answers write it. */
export function canonicalHeaderName(name: string): string {
  return name
    .toLowerCase()
    .split('-')
    .map((part) => (part === '' ? part : part[0].toUpperCase() + part.slice(1)))
    .join('-');
}

/** The fields of a `Vary` value, trimmed, empty ones dropped. */
function fieldsOf(value: string): string[] {
  return value
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f !== '');
}

/**
 * `existing` followed by every field of `added` it does not name yet (case-insensitively), as one
 * comma-separated value; `*` in either is `*`. The compression and CORS middleware append to
 * `Vary` the same way, so whichever writes last, a field is named once.
 */
export function mergeVary(existing: string, added: string): string {
  const fields = fieldsOf(existing);
  const named = new Set(fields.map((f) => f.toLowerCase()));
  if (named.has('*')) return '*';
  for (const field of fieldsOf(added)) {
    const lower = field.toLowerCase();
    if (lower === '*') return '*';
    if (!named.has(lower)) {
      named.add(lower);
      fields.push(field);
    }
  }
  return fields.join(', ');
}

/** The last merge `addVary` made: the same existing value (CORS's `Origin`) comes with every request. */
let lastMerge: { existing: string; vary: string; merged: string } | undefined;

/** Sets `Vary` to name `vary`'s fields too, keeping what the response already names (CORS's `Origin`). */
export function addVary(res: ServerResponse, vary: string): void {
  const header = res.getHeader('Vary');
  if (header === undefined) {
    res.setHeader('Vary', vary);
    return;
  }
  const existing = Array.isArray(header) ? header.join(', ') : String(header);
  if (lastMerge?.existing !== existing || lastMerge.vary !== vary)
    lastMerge = { existing, vary, merged: mergeVary(existing, vary) };
  res.setHeader('Vary', lastMerge.merged);
}

/** Lists `withVary` made, per list it was given (the gate's remembered CORS headers, one per origin). */
const varied = new WeakMap<readonly string[], { vary: string; list: readonly string[] }>();

/**
 * A flat `[name, value, ...]` header list (as `res.writeHead` takes) whose `Vary` names `vary`'s
 * fields too: merged into the list's own `Vary` when it has one, else appended. Made once per list
 * and value; the caller must not change it.
 */
export function withVary(headers: readonly string[], vary: string): readonly string[] {
  const known = varied.get(headers);
  if (known?.vary === vary) return known.list;
  const list = [...headers];
  let merged = false;
  for (let i = 0; i < list.length; i += 2) {
    if (list[i].toLowerCase() === 'vary') {
      list[i + 1] = mergeVary(list[i + 1], vary);
      merged = true;
    }
  }
  if (!merged) list.push('Vary', vary);
  varied.set(headers, { vary, list });
  return list;
}

/** Lists `headWith` made, per list it was given, by `Vary` and then `Cache-Control` value. */
const heads = new WeakMap<readonly string[], Map<string, Map<string, readonly string[]>>>();

/**
 * A new `[name, value, ...]` list for one response's `writeHead`: `headers` with `Vary` naming
 * `vary`'s fields too (`withVary`), then `Cache-Control`. The caller appends its own headers. The
 * list before the copy is made once per `headers` list, `vary` and `cacheControl`.
 */
export function headWith(headers: readonly string[], vary: string, cacheControl: string): string[] {
  let byVary = heads.get(headers);
  if (byVary === undefined) heads.set(headers, (byVary = new Map()));
  let byCacheControl = byVary.get(vary);
  if (byCacheControl === undefined) byVary.set(vary, (byCacheControl = new Map()));
  let head = byCacheControl.get(cacheControl);
  if (head === undefined) {
    head = [...withVary(headers, vary), 'Cache-Control', cacheControl];
    byCacheControl.set(cacheControl, head);
  }
  return head.slice();
}
