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

/** Sets `Vary` to name `vary`'s fields too, keeping what the response already names (CORS's `Origin`). */
export function addVary(res: ServerResponse, vary: string): void {
  const existing = res.getHeader('Vary');
  if (existing === undefined) {
    res.setHeader('Vary', vary);
    return;
  }
  const current = Array.isArray(existing) ? existing.join(', ') : String(existing);
  res.setHeader('Vary', mergeVary(current, vary));
}

/**
 * A flat `[name, value, ...]` header list (as `res.writeHead` takes) whose `Vary` names `vary`'s
 * fields too: merged into the list's own `Vary` when it has one, else appended.
 */
export function withVary(headers: readonly string[], vary: string): string[] {
  const out = [...headers];
  for (let i = 0; i < out.length; i += 2) {
    if (out[i].toLowerCase() === 'vary') {
      out[i + 1] = mergeVary(out[i + 1], vary);
      return out;
    }
  }
  out.push('Vary', vary);
  return out;
}
