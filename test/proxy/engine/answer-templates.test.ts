/**
 * The bookkeeping of answer templates (`engine/answer-templates.ts`): signatures name one
 * combination of memo keys and nothing else, a template is made on a signature's second sighting,
 * what is remembered of signatures seen once is bounded, and templates are forgotten oldest first.
 * (That template answers equal plain evaluation is the differential tests' part, and their budget
 * `memo-eviction.test.ts`'.)
 */
import fc from 'fast-check';
import {
  AnswerTemplates,
  NO_PLACE,
  OutcomePlaces,
  PLACES,
  templateBytes,
  templateSignature,
  UNIT_PIECES,
} from '../../../src/proxy/engine/answer-templates';

const keysArb = fc.array(
  fc.option(fc.string({ maxLength: 6, unit: fc.constantFrom('a', '|', ':', '-', '1', '\u0000') }), {
    nil: undefined,
  }),
  { maxLength: 4 },
);

test('two different combinations of memo keys never share a signature', () => {
  fc.assert(
    fc.property(fc.constantFrom('proxy enabled', 'proxy all'), keysArb, keysArb, (kind, a, b) => {
      const same = a.length === b.length && a.every((key, i) => key === b[i]);
      expect(templateSignature(kind, a) === templateSignature(kind, b)).toBe(same);
    }),
  );
  expect(templateSignature('proxy enabled', ['x'])).not.toBe(templateSignature('proxy all', ['x']));
  // keys that a signature without lengths would run together
  const ambiguous: (string | undefined)[][][] = [
    [['a|a'], ['a', 'a']],
    [[undefined], ['-']],
    [['1:a'], ['', 'a']],
    [['a|-'], ['a', undefined]],
  ];
  for (const [a, b] of ambiguous)
    expect(templateSignature('proxy all', a)).not.toBe(templateSignature('proxy all', b));
});

test('a signature longer than 8,192 characters gets no template', () => {
  expect(templateSignature('proxy all', ['a'.repeat(8000)])).toBeDefined();
  expect(templateSignature('proxy all', ['a'.repeat(8000), 'b'.repeat(300)])).toBeUndefined();
});

test('a template is made on the second sighting; signatures seen once are bounded and start over', () => {
  const templates = new AnswerTemplates();
  expect(templates.admit('s1')).toBe(false);
  expect(templates.admit('s1')).toBe(true);
  // 1,024 others fill what is remembered, the next one starts it over: s1 counts as new again
  for (let i = 0; i < 1024; i++) templates.admit(`other-${i}`);
  expect(templates.admit('s1')).toBe(false);
  expect(templates.admit('s1')).toBe(true);
});

test('templates are forgotten oldest first, their bytes with them', () => {
  const templates = new AnswerTemplates();
  const make = (signature: string, run: string) => {
    const runs = [Buffer.from(run), Buffer.alloc(0)];
    const bytes = templateBytes(signature, runs, 1, 2);
    templates.set(signature, {
      signature,
      evaluated: Int32Array.of(0),
      runs,
      usage: [],
      pieces: [],
      bytes,
    });
    return bytes;
  };
  const first = make('a', '{"x":1}');
  const second = make('b', '{"y":2},{"z":3}');
  expect(templates.size).toBe(2);
  expect(templates.bytes).toBe(first + second);
  expect(second - first).toBe(8); // the longer run, counted byte for byte
  expect(templates.forgetOldest()).toBe(first);
  expect(templates.get('a')).toBeUndefined();
  expect(templates.get('b')?.runs[0].toString()).toBe('{"y":2},{"z":3}');
  expect(templates.forgetOldest()).toBe(second);
  expect(templates.forgetOldest()).toBe(0);
  expect(templates.bytes).toBe(0);
});

test("a template's pieces: one per combination of places of a unit's outcomes, counted in its bytes", () => {
  const templates = new AnswerTemplates();
  const runs = [Buffer.from('{"a":1}'), Buffer.alloc(0), Buffer.from('{"b":2}'), Buffer.from('{"c":3}')];
  const template = {
    signature: 's',
    evaluated: Int32Array.of(5, 6, 8),
    runs,
    usage: [],
    pieces: new Array<Buffer | undefined>(2 * UNIT_PIECES).fill(undefined),
    bytes: templateBytes('s', runs, 3, 0),
  };
  templates.set('s', template);
  const before = templates.bytes;
  expect(templates.addPiece(template, 3, Buffer.from('{"x":1},{"b":2}'), 100)).toBe(true);
  expect(template.pieces[3]?.toString()).toBe('{"x":1},{"b":2}');
  // an empty piece (nothing listed) is a piece too
  expect(templates.addPiece(template, UNIT_PIECES, Buffer.alloc(0), 64)).toBe(true);
  // a slot holds one piece: refused, nothing counted
  expect(templates.addPiece(template, 3, Buffer.from('x'), 100)).toBe(false);
  expect(templates.bytes).toBe(before + 164);
  expect(template.bytes).toBe(before + 164);
  // a template no longer kept takes no piece
  expect(templates.forgetOldest()).toBe(before + 164);
  expect(templates.addPiece(template, 4, Buffer.from('x'), 100)).toBe(false);
  expect(templates.bytes).toBe(0);
});

test('outcomes are placed in the order their toggle meets them, up to PLACES of them', () => {
  const places = new OutcomePlaces(3);
  expect(places.of(0, 7)).toBe(0);
  expect(places.of(1, 300)).toBe(0);
  expect(places.of(0, 2)).toBe(1);
  expect(places.of(0, 7)).toBe(0);
  for (let k = 2; k < PLACES; k++) expect(places.of(0, 10 + k)).toBe(k);
  expect(places.of(0, 99)).toBe(NO_PLACE);
  expect(places.of(0, 99)).toBe(NO_PLACE);
  expect(places.of(1, 300)).toBe(0);
  expect(places.of(1, 301)).toBe(1);
});

test("a signature is the request before's string only while its kind and every key are the same", () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.constantFrom('proxy enabled', 'proxy all', 'ofrep all'), keysArb), {
        maxLength: 10,
      }),
      (requests) => {
        const templates = new AnswerTemplates();
        for (const [kind, keys] of requests)
          expect(templates.signature(kind, keys)).toBe(templateSignature(kind, keys));
      },
    ),
  );
  const templates = new AnswerTemplates();
  const first = templates.signature('proxy enabled', ['3:pro', undefined]);
  expect(templates.signature('proxy enabled', ['3:pro', undefined])).toBe(first);
  expect(templates.signature('proxy all', ['3:pro', undefined])).toBe(
    templateSignature('proxy all', ['3:pro', undefined]),
  );
  expect(templates.signature('proxy all', ['3:pro'])).toBe(templateSignature('proxy all', ['3:pro']));
});
