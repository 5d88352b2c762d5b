import type { Context } from 'unleash-client';
import { sameItems } from '../../common/lists/same-items';

/** Length-prefixed, so no two different sequences of strings share an encoding. */
const field = (name: string, value: string) => `${name.length}:${name}${value.length}:${value}`;

/**
 * Field names in sorted order, the last order found again: contexts one after another mostly have
 * the same names in the same order (one builder, one client), and sorting them was most of the
 * work besides writing the string. One per level (root, properties).
 */
class SortedNames {
  private names: readonly string[] = [];
  private sorted: readonly string[] = [];

  of(names: string[]): readonly string[] {
    if (sameItems(names, this.names)) return this.sorted;
    this.names = names;
    this.sorted = [...names].sort();
    return this.sorted;
  }
}

const rootNames = new SortedNames();
const propertyNames = new SortedNames();

/**
 * A canonical string for an (enhanced) evaluation context: two contexts with the same key evaluate
 * the same way. Fields are sorted; `undefined` fields are left out, as the SDK cannot tell them from
 * absent ones. Undefined when a value is not a string (an enricher's Date, number or object), as
 * then equal keys would not prove equal evaluation.
 */
export function canonicalContext(context: Context): string | undefined {
  let key = '';
  const record = context as Record<string, unknown>;
  for (const name of rootNames.of(Object.keys(record))) {
    const value = record[name];
    if (value === undefined) continue;
    if (name === 'properties') {
      if (typeof value !== 'object' || value === null) return undefined;
      const props = value as Record<string, unknown>;
      let inner = '';
      for (const prop of propertyNames.of(Object.keys(props))) {
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
