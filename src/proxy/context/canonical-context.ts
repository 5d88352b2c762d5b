import type { Context } from 'unleash-client';

/** Length-prefixed, so no two different sequences of strings share an encoding. */
const field = (name: string, value: string) => `${name.length}:${name}${value.length}:${value}`;

/**
 * A canonical string for an (enhanced) evaluation context: two contexts with the same key evaluate
 * the same way. Fields are sorted; `undefined` fields are left out, as the SDK cannot tell them from
 * absent ones. Undefined when a value is not a string (an enricher's Date, number or object), as
 * then equal keys would not prove equal evaluation.
 */
export function canonicalContext(context: Context): string | undefined {
  let key = '';
  const record = context as Record<string, unknown>;
  for (const name of Object.keys(record).sort()) {
    const value = record[name];
    if (value === undefined) continue;
    if (name === 'properties') {
      if (typeof value !== 'object' || value === null) return undefined;
      const props = value as Record<string, unknown>;
      let inner = '';
      for (const prop of Object.keys(props).sort()) {
        const v = props[prop];
        if (v === undefined) continue;
        if (typeof v !== 'string') return undefined;
        inner += field(prop, v);
      }
      key += field(name, inner);
      continue;
    }
    if (typeof value !== 'string') return undefined;
    key += field(name, value);
  }
  return key;
}
