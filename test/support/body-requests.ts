import fc from 'fast-check';

/**
 * Content types for the front's differential tests: mostly plain `application/json` (`plainWeight`
 * in 3 more), else its other spellings and charsets the JSON parser reads or refuses, and other
 * types. The body endpoints (`POST /proxy`, OFREP bulk) must answer each the same through the
 * listener and through Express (the body step reads plain JSON itself, hands the rest to the parser).
 */
export function contentTypeArb(plainWeight: number): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: plainWeight, arbitrary: fc.constant('application/json') },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        'application/json; charset=utf-8',
        'Application/JSON; charset="UTF-8"',
        'application/json; charset=latin1',
        'application/json;charset=utf-16',
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/vnd.api+json',
        '',
      ),
    },
  );
}
