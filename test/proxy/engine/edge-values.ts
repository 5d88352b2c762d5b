import fc from 'fast-check';
import type { Context } from 'unleash-client';

/** Any UTF-16 code unit, lone surrogates included. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n));

/** Strings of any code units, lone surrogates included. */
export const anyString = fc.string({ unit: codeUnit, maxLength: 12 });

/** Values at the edges of what the operators parse: numbers, dates, versions, addresses, case. */
export const EDGE_VALUES = [
  '',
  ' ',
  'a',
  'A',
  'pro',
  ' pro ',
  'PRO',
  'é',
  'É',
  'İ',
  'ß',
  'Σ',
  '\ud800',
  '\udfff',
  '😀',
  'ada@example.com',
  '0',
  '-0',
  '1',
  '-1',
  '1.5',
  '1e3',
  ' 12 ',
  '0x10',
  'NaN',
  'Infinity',
  '9007199254740993',
  '1.2.3',
  '1.2.3-beta.1',
  '1.2.3-beta.2',
  '1.2.3-rc.1+build.5',
  '2.0.0',
  'v1.2.3',
  '01.2.3',
  '1.2',
  '2000-01-01T00:00:00.000Z',
  '2025-06-01',
  '2090-01-01T00:00:00Z',
  'not a date',
  '10.1.2.3',
  '127.0.0.1',
  '10.0.0.0/8',
  '300.1.1.1',
  '::1',
  '2001:db8::1',
  '::ffff:10.0.0.1',
  'x'.repeat(5000),
];

export const edgeValue = fc.oneof({ arbitrary: fc.constantFrom(...EDGE_VALUES), weight: 4 }, anyString);

/** Context fields: root fields, properties, and names found on every object's prototype. */
export const FIELDS = [
  'userId',
  'sessionId',
  'remoteAddress',
  'appName',
  'environment',
  'currentTime',
  'plan',
  'version',
  'age',
  'email',
  'constructor',
  'toString',
  '',
];

export const field = fc.constantFrom(...FIELDS);

const ROOT = ['userId', 'sessionId', 'remoteAddress', 'appName', 'environment', 'currentTime'];

/** Contexts with fields missing or present at the root or in `properties`, with edge values. */
export const contextArb: fc.Arbitrary<Context> = fc
  .tuple(
    fc.dictionary(fc.constantFrom(...ROOT), edgeValue, { maxKeys: 6 }),
    fc.option(fc.dictionary(field, edgeValue, { maxKeys: 6 }), { nil: undefined }),
  )
  .map(([root, properties]) => {
    const context: Context = { ...root };
    if (properties) context.properties = properties;
    return context;
  });
