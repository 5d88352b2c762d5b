/**
 * `copyFields` makes what an object spread makes (the contexts the SDK and the engine evaluate are
 * built with it in place of `{ ...a, ...b }`): the same own properties, values, order, descriptors
 * and prototype, for random objects with repeated keys, `__proto__`, numeric-like keys, symbols and
 * non-enumerable properties.
 */
import fc from 'fast-check';
import { copyFields } from '../../../src/proxy/context/copy-fields';

const SYMBOLS = [Symbol('a'), Symbol('b')];

const keyArb = fc.oneof(
  fc.constantFrom(
    'appName',
    'environment',
    'userId',
    'properties',
    '__proto__',
    'constructor',
    '1',
    '0',
    'x',
  ),
  fc.string({ maxLength: 4 }),
);

/** A plain object made as JSON.parse or a schema would make it, plus symbols and a hidden property. */
const objectArb = fc
  .tuple(
    fc.array(fc.tuple(keyArb, fc.oneof(fc.string(), fc.integer(), fc.constant(undefined))), { maxLength: 8 }),
    fc.subarray(SYMBOLS),
    fc.boolean(),
  )
  .map(([entries, symbols, hidden]) => {
    const object = JSON.parse(
      `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v ?? null)}`).join(',')}}`,
    ) as Record<PropertyKey, unknown>;
    for (const symbol of symbols) object[symbol] = symbol.description;
    if (hidden) Object.defineProperty(object, 'hidden', { value: 1, enumerable: false });
    return object;
  });

/** Everything a spread's result can differ in. */
function shape(object: object): unknown {
  return {
    prototype: Object.getPrototypeOf(object) as unknown,
    keys: Reflect.ownKeys(object).map((k) => [k, Object.getOwnPropertyDescriptor(object, k)]),
  };
}

describe('copyFields', () => {
  test('makes what { ...a, ...b } makes', () => {
    fc.assert(
      fc.property(objectArb, objectArb, (a, b) => {
        expect(shape(copyFields(copyFields({}, a), b))).toEqual(shape({ ...a, ...b }));
      }),
      { numRuns: 2000 },
    );
  });

  test('makes what { ...a, extra } makes when fields are set after the copy', () => {
    fc.assert(
      fc.property(objectArb, fc.string(), (a, value) => {
        const copied = copyFields<Record<string, unknown>>({}, a);
        copied.environment = value;
        copied.remoteAddress = value;
        expect(shape(copied)).toEqual(shape({ ...a, environment: value, remoteAddress: value }));
      }),
      { numRuns: 2000 },
    );
  });

  test('leaves out the skipped key as an object rest does', () => {
    fc.assert(
      fc.property(objectArb, keyArb, (a, skip) => {
        const { [skip]: _left, ...rest } = a;
        expect(shape(copyFields({}, a, skip))).toEqual(shape(rest));
      }),
      { numRuns: 2000 },
    );
  });

  test('a __proto__ key is a property, never the prototype', () => {
    const source = JSON.parse('{"__proto__":{"polluted":true},"userId":"u"}') as object;
    const copied = copyFields({}, source) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copied)).toBe(Object.prototype);
    expect(copied.polluted).toBeUndefined();
    expect(Object.keys(copied)).toEqual(['__proto__', 'userId']);
  });
});
