/**
 * The canonical string of a context (`src/proxy/context/canonical-context.ts`), the input of its
 * derived ETag: fields sorted, whatever order they were added in and whatever context came before
 * (the last sorted order of names is found again, never trusted for other names).
 */
import fc from 'fast-check';
import type { Context } from 'unleash-client';
import { canonicalContext } from '../../../src/proxy/context/canonical-context';

/** The same encoding written plainly: every level's names sorted anew. */
function reference(context: Context): string | undefined {
  const field = (name: string, value: string) => `${name.length}:${name}${value.length}:${value}`;
  const record = context as Record<string, unknown>;
  let key = '';
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

const NAMES = ['userId', 'sessionId', 'appName', 'environment', 'remoteAddress', 'b', 'a', 'B'];
const valueArb = fc.oneof(fc.constantFrom('x', '', 'pro', '1:a'), fc.constant(undefined), fc.constant(7));
/** Entries in a random order (insertion order is the order `Object.keys` gives). */
const entriesArb = fc.uniqueArray(fc.tuple(fc.constantFrom(...NAMES), valueArb), {
  selector: ([name]) => name,
  maxLength: NAMES.length,
});
const contextArb: fc.Arbitrary<Context> = fc
  .record({ root: entriesArb, properties: fc.option(entriesArb, { nil: undefined }) })
  .map(({ root, properties }) => {
    const context = Object.fromEntries(root) as Record<string, unknown>;
    if (properties !== undefined) context.properties = Object.fromEntries(properties);
    return context as Context;
  });

test('one string per context, sorted at every level, whatever the contexts before it', () => {
  fc.assert(
    fc.property(fc.array(contextArb, { minLength: 1, maxLength: 12 }), (contexts) => {
      for (const context of contexts) expect(canonicalContext(context)).toBe(reference(context));
    }),
  );
});

test('the same names in another order, or other names, are sorted anew', () => {
  const first = canonicalContext({ userId: 'u', appName: 'web', properties: { b: '2', a: '1' } });
  expect(first).toBe('7:appName3:web10:properties12:1:a1:11:b1:26:userId1:u');
  // the same names in another order
  expect(canonicalContext({ appName: 'web', userId: 'u', properties: { a: '1', b: '2' } })).toBe(first);
  // one name more at each level
  expect(
    canonicalContext({ userId: 'u', appName: 'web', sessionId: 's', properties: { b: '2', a: '1', c: '3' } }),
  ).toBe('7:appName3:web10:properties18:1:a1:11:b1:21:c1:39:sessionId1:s6:userId1:u');
});
