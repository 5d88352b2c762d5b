import type { Context } from 'unleash-client';

/**
 * A canonical string for an (enhanced) evaluation context: two contexts with the same key evaluate
 * the same way. Fields are sorted; `undefined` fields are left out, as the SDK cannot tell them from
 * absent ones. Undefined when a value is not a string (an enricher's Date, number or object), as
 * then equal keys would not prove equal evaluation.
 */
export function canonicalContext(context: Context): string | undefined {
  const parts: string[] = [];
  const record = context as Record<string, unknown>;
  for (const name of Object.keys(record).sort()) {
    const value = record[name];
    if (value === undefined) continue;
    if (name === 'properties') {
      if (typeof value !== 'object' || value === null) return undefined;
      const props = value as Record<string, unknown>;
      const entries: string[] = [];
      for (const prop of Object.keys(props).sort()) {
        const v = props[prop];
        if (v === undefined) continue;
        if (typeof v !== 'string') return undefined;
        entries.push(prop, v);
      }
      parts.push(name, JSON.stringify(entries));
      continue;
    }
    if (typeof value !== 'string') return undefined;
    parts.push(name, value);
  }
  return JSON.stringify(parts);
}
