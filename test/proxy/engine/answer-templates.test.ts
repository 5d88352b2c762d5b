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
  PIECES,
  pieceOf,
  templateBytes,
  templateSignature,
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
      pieceIds: new Int32Array(PIECES).fill(-1),
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

test("a template's pieces: one per outcome of an evaluated toggle, up to 4, counted in its bytes", () => {
  const templates = new AnswerTemplates();
  const runs = [Buffer.from('{"a":1}'), Buffer.from('{"b":2}')];
  const template = {
    signature: 's',
    evaluated: Int32Array.of(5),
    runs,
    usage: [],
    pieceIds: new Int32Array(PIECES).fill(-1),
    pieces: [],
    bytes: templateBytes('s', runs, 1, 0),
  };
  templates.set('s', template);
  const before = templates.bytes;
  expect(pieceOf(template, 0, 7)).toBeUndefined();
  for (let id = 10; id < 10 + PIECES; id++)
    expect(templates.addPiece(template, 0, id, Buffer.from(`{"x":${id}},{"b":2}`), 100)).toBe(true);
  expect(pieceOf(template, 0, 11)?.toString()).toBe('{"x":11},{"b":2}');
  expect(pieceOf(template, 0, 7)).toBeUndefined();
  // no free slot: refused, nothing counted
  expect(templates.addPiece(template, 0, 99, Buffer.from('x'), 100)).toBe(false);
  expect(templates.bytes).toBe(before + 100 * PIECES);
  expect(template.bytes).toBe(before + 100 * PIECES);
  // a template no longer kept takes no piece
  expect(templates.forgetOldest()).toBe(before + 100 * PIECES);
  expect(templates.addPiece(template, 0, 1, Buffer.from('x'), 100)).toBe(false);
  expect(templates.bytes).toBe(0);
});
