import fc from 'fast-check';
import { sameItems } from '../../../src/common/lists/same-items';

test('two lists are the same when they hold equal items in the same order', () => {
  expect(sameItems([], [])).toBe(true);
  expect(sameItems(['a', undefined], ['a', undefined])).toBe(true);
  expect(sameItems(['a', 'b'], ['b', 'a'])).toBe(false);
  expect(sameItems(['a'], ['a', 'a'])).toBe(false);
  expect(sameItems([undefined], [])).toBe(false);
  fc.assert(
    fc.property(
      fc.array(fc.constantFrom('a', 'b', undefined)),
      fc.array(fc.constantFrom('a', 'b', undefined)),
      (a, b) => {
        expect(sameItems(a, b)).toBe(JSON.stringify(a.map(String)) === JSON.stringify(b.map(String)));
      },
    ),
  );
});
