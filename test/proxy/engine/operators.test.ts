/**
 * One property per constraint operator: the engine's compiled check answers what
 * `unleash-client`'s own `Strategy.checkConstraint` answers, for random constraints (with
 * `inverted`, `caseInsensitive`, lists with duplicates, empty and huge values) and random contexts
 * (missing fields, numbers, dates and versions at their edges, Unicode with lone surrogates, IPv4
 * and IPv6 addresses).
 */
import fc from 'fast-check';
import { Strategy, type Context } from 'unleash-client';
import { compileConstraint } from '../../../src/proxy/engine/compiled/constraints';
import type { Constraint } from '../../../src/proxy/upstream/sdk/types';
import { contextArb, edgeValue, field } from './edge-values';

/** Cases per operator: 300 by default; `DIFF_RUNS=5000` for a deeper search. */
const RUNS = Number(process.env.DIFF_RUNS ?? 300);
jest.setTimeout(Math.max(30_000, RUNS * 20));

const reference = new Strategy('reference');

const DATES = ['2000-01-01T00:00:00.000Z', '2090-01-01T00:00:00.000Z', '1970-01-01', 'not a date', ''];
const PATTERNS = ['^a.*@', '(?i)abc', '[', 'é+', '\\d+', '.*', '^$', 'Σ', '\\p{L}+'];
const RANGES = [
  '10.0.0.0/8',
  '127.0.0.1',
  '::1',
  '2001:db8::/32',
  'garbage',
  ' 10.1.0.0/16 ',
  '',
  '0.0.0.0/0',
];

const flags = { inverted: fc.boolean(), caseInsensitive: fc.boolean() };

function listConstraint(operator: string, values: fc.Arbitrary<string>): fc.Arbitrary<Constraint> {
  return fc.record({ contextName: field, values: fc.array(values, { maxLength: 5 }), ...flags }).chain((c) =>
    // duplicates: the list again, or a value of it twice
    fc.constantFrom(c.values, [...c.values, ...c.values]).map((values) => ({ ...c, values, operator })),
  ) as unknown as fc.Arbitrary<Constraint>;
}

function valueConstraint(operator: string, value: fc.Arbitrary<string>): fc.Arbitrary<Constraint> {
  return fc
    .record({ contextName: field, value, ...flags })
    .map((c) => ({ ...c, operator, values: [] })) as unknown as fc.Arbitrary<Constraint>;
}

/** Contexts that often carry the constraint's own values, so matches are common. */
function contextFor(constraint: Constraint): fc.Arbitrary<Context> {
  const own = [
    ...(constraint.values ?? []),
    ...(constraint.value === undefined ? [] : [String(constraint.value)]),
  ];
  const near = own.length === 0 ? edgeValue : fc.oneof(fc.constantFrom(...own), edgeValue);
  return fc.tuple(contextArb, near, fc.boolean()).map(([context, value, atRoot]) => {
    const name = constraint.contextName;
    if (atRoot) return { ...context, [name]: value } as Context;
    return { ...context, properties: { ...context.properties, [name]: value } };
  });
}

function agrees(constraints: fc.Arbitrary<Constraint>): void {
  fc.assert(
    fc.property(
      constraints.chain((c) => fc.tuple(fc.constant(c), contextFor(c))),
      ([constraint, context]) => {
        expect(compileConstraint(constraint)(context)).toBe(reference.checkConstraint(constraint, context));
      },
    ),
    { numRuns: RUNS },
  );
}

describe("the engine's constraint checks equal the SDK's", () => {
  test.each(['IN', 'NOT_IN'])('%s answers as the SDK does', (operator) => {
    agrees(listConstraint(operator, edgeValue));
  });

  test.each(['STR_STARTS_WITH', 'STR_ENDS_WITH', 'STR_CONTAINS'])(
    '%s answers as the SDK does',
    (operator) => {
      agrees(listConstraint(operator, edgeValue));
    },
  );

  test.each(['NUM_EQ', 'NUM_GT', 'NUM_GTE', 'NUM_LT', 'NUM_LTE'])(
    '%s answers as the SDK does',
    (operator) => {
      agrees(valueConstraint(operator, edgeValue));
    },
  );

  test.each(['DATE_AFTER', 'DATE_BEFORE'])('%s answers as the SDK does', (operator) => {
    agrees(valueConstraint(operator, fc.constantFrom(...DATES)));
  });

  test.each(['SEMVER_EQ', 'SEMVER_GT', 'SEMVER_GTE', 'SEMVER_LT', 'SEMVER_LTE'])(
    '%s answers as the SDK does',
    (operator) => {
      agrees(valueConstraint(operator, edgeValue));
    },
  );

  test('REGEX answers as the SDK does', () => {
    agrees(valueConstraint('REGEX', fc.oneof(fc.constantFrom(...PATTERNS), edgeValue)));
  });

  test('IN_CIDR answers as the SDK does', () => {
    agrees(listConstraint('IN_CIDR', fc.oneof(fc.constantFrom(...RANGES), edgeValue)));
  });

  test('an operator the engine does not know is not compiled', () => {
    expect(() =>
      compileConstraint({ contextName: 'x', operator: 'STR_EQUALS', values: ['a'] } as unknown as Constraint),
    ).toThrow('operator STR_EQUALS');
  });

  test('a list operator with a value that is not a string is not compiled', () => {
    expect(() =>
      compileConstraint({ contextName: 'x', operator: 'IN', values: ['a', 1] } as unknown as Constraint),
    ).toThrow('without a list of strings');
  });
});
