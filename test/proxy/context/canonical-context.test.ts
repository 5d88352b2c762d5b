/**
 * The canonical string of a context (`src/proxy/context/canonical-context.ts`), the input of its
 * derived ETag: fields sorted, whatever order they were added in and whatever context came before
 * (the last sorted order of names is found again, never trusted for other names): the same string
 * as a copy of the module that saw nothing before, and the encoding spelled out for a few contexts.
 */
import fc from 'fast-check';
import type { Context } from 'unleash-client';
import { canonicalContext } from '../../../src/proxy/context/canonical-context';

/**
 * The canonical string a process that saw no context before would make: a fresh copy of the module,
 * whose last sorted order is empty, so it sorts every level anew.
 */
function fresh(context: Context): string | undefined {
  let made: string | undefined;
  jest.isolateModules(() => {
    const module = jest.requireActual<typeof import('../../../src/proxy/context/canonical-context')>(
      '../../../src/proxy/context/canonical-context',
    );
    made = module.canonicalContext(context);
  });
  return made;
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
      for (const context of contexts) expect(canonicalContext(context)).toBe(fresh(context));
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
