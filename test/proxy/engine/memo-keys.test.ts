/**
 * Memo keys found again from one request to the next (`engine/memo-keys.ts`, `LastKeys`): a group's
 * key is always what `memoKey` makes of the request's own values, and it is the request before's
 * string only when those values are the same; nothing longer than the key's limit is kept.
 */
import fc from 'fast-check';
import type { Context } from 'unleash-client';
import { LastKeys, memoKey } from '../../../src/proxy/engine/memo-keys';

const INPUTS = ['appName', 'plan', 'region'] as const;

/** A value a field may hold in a context: a string, another type, or nothing. */
const valueArb = fc.oneof(
  fc.constantFrom('web', 'pro', 'eu', '', '1:a', '-'),
  fc.constantFrom(undefined, null, 7, true),
);

const contextArb: fc.Arbitrary<Context> = fc
  .record({
    root: fc.dictionary(fc.constantFrom(...INPUTS), valueArb, { maxKeys: 3 }),
    properties: fc.option(fc.dictionary(fc.constantFrom(...INPUTS), valueArb, { maxKeys: 3 }), {
      nil: undefined,
    }),
  })
  .map(({ root, properties }) => ({ ...root, properties }) as unknown as Context);

test('a group key is what memoKey makes of the request, whatever came before', () => {
  fc.assert(
    fc.property(
      fc.array(contextArb, { minLength: 1, maxLength: 12 }),
      fc.constantFrom(6, 20, 1000),
      (contexts, max) => {
        const last = new LastKeys(2);
        for (const context of contexts) {
          expect(last.plain(0, INPUTS, context, max)).toBe(memoKey(INPUTS, context, max));
          expect(last.plain(1, ['plan'], context, max)).toBe(memoKey(['plan'], context, max));
        }
      },
    ),
  );
});

test('the same values give the same key; a value that moved or changed gives a new key', () => {
  const last = new LastKeys(1);
  const first = last.plain(0, INPUTS, { appName: 'web', properties: { plan: 'pro' } } as Context, 100);
  // equal values in new strings: the same key
  const again = last.plain(0, INPUTS, { appName: `w${'eb'}`, properties: { plan: 'pro' } } as Context, 100);
  expect(again).toBe(first);
  // the same value as a root field instead of a property is another key
  const moved = last.plain(0, INPUTS, { appName: 'web', plan: 'pro' } as unknown as Context, 100);
  expect(moved).not.toBe(first);
  expect(moved).toBe(memoKey(INPUTS, { appName: 'web', plan: 'pro' } as unknown as Context, 100));
  // a number reads as no value, as memoKey reads it
  const numeric = last.plain(0, ['plan'], { properties: { plan: 7 } } as unknown as Context, 100);
  expect(numeric).toBe('--');
});

test('a key past the limit is not made and its values are not kept; the limit is part of the key', () => {
  const last = new LastKeys(1);
  const long = { properties: { plan: 'x'.repeat(50) } } as Context;
  expect(last.plain(0, ['plan'], long, 20)).toBeUndefined();
  expect(last.plain(0, ['plan'], long, 20)).toBeUndefined();
  expect(last.plain(0, ['plan'], long, 100)).toBe(memoKey(['plan'], long, 100));
  expect(last.plain(0, ['plan'], long, 20)).toBeUndefined();
});

test('a key with the clock window follows the key and the window', () => {
  const last = new LastKeys(1);
  const key = last.plain(0, ['plan'], { properties: { plan: 'pro' } } as Context, 100) as string;
  const a = last.windowed(0, key, '3');
  expect(a).toBe(`${key}@3`);
  expect(last.windowed(0, key, '3')).toBe(a);
  expect(last.windowed(0, key, '4')).toBe(`${key}@4`);
  // a key not the group's last is written out
  expect(last.windowed(0, 'other', '4')).toBe('other@4');
});
