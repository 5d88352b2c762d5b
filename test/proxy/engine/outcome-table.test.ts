/**
 * The answer loop's compact view of a revision: interned outcomes' enabled flags, entry sizes and
 * entries by id (grown as outcomes are interned), and each toggle's kind, memo place and constant.
 */
import { OutcomeTable } from '../../../src/proxy/engine/outcome-table';
import type { CompiledToggle } from '../../../src/proxy/engine/compiled-toggle';
import type { Outcome } from '../../../src/proxy/engine/outcomes';
import { CONSTANT, EVALUATED, REMEMBERED, ToggleSteps } from '../../../src/proxy/engine/toggle-steps';

const outcome = (id: number, enabled: boolean): Outcome => ({
  name: `t${id}`,
  id,
  enabled,
  variant: 'disabled',
  entry: Buffer.from(`{"name":"t${id}","enabled":${String(enabled)}${' '.repeat(id % 7)}}`),
});

describe('OutcomeTable', () => {
  test('keeps every outcome by id, across growth of its arrays', () => {
    const table = new OutcomeTable();
    const added = Array.from({ length: 300 }, (_, id) => outcome(id, id % 3 === 0));
    for (const o of added) {
      expect(table.nextId).toBe(o.id);
      table.add(o);
    }
    expect(table.list).toEqual(added);
    added.forEach((o, id) => {
      expect(table.enabled[id]).toBe(o.enabled ? 1 : 0);
      expect(table.sizes[id]).toBe(o.entry.length);
      expect(table.entries[id]).toBe(o.entry);
    });
  });

  test('refuses an outcome numbered out of turn', () => {
    const table = new OutcomeTable();
    table.add(outcome(0, true));
    expect(() => table.add(outcome(2, true))).toThrow('expected 1');
    expect(table.list).toHaveLength(1);
  });
});

describe('ToggleSteps', () => {
  test('reads each toggle once: kind, memo place, constant id', () => {
    const toggle = (fields: Partial<CompiledToggle>) =>
      ({ group: -1, slot: -1, constant: undefined, ...fields }) as CompiledToggle;
    const steps = new ToggleSteps([
      toggle({ constant: outcome(4, true) }),
      toggle({ group: 2, slot: 5 }),
      toggle({}),
      toggle({ constant: { ...outcome(0, false), id: -3 } }),
    ]);
    expect([...steps.kind]).toEqual([CONSTANT, REMEMBERED, EVALUATED, CONSTANT]);
    expect([...steps.group]).toEqual([-1, 2, -1, -1]);
    expect([...steps.slot]).toEqual([-1, 5, -1, -1]);
    expect([...steps.constantId]).toEqual([4, -1, -1, -3]);
    expect([...steps.all]).toEqual([0, 1, 2, 3]);
  });
});
