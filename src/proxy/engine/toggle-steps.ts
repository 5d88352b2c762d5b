import type { CompiledToggle } from './compiled-toggle';

/** A toggle whose outcome is the same for every context (`CompiledToggle.constant`). */
export const CONSTANT = 0;
/** A toggle whose results are remembered per value of its few-valued inputs (its memo group). */
export const REMEMBERED = 1;
/** Every other toggle: evaluated on every request. */
export const EVALUATED = 2;

/**
 * What the answer loop needs to know of each toggle of a revision before looking at it, by
 * toggle index, in typed arrays: its kind, its memo group and slot, its constant outcome's id. The
 * loop reads these compact arrays and touches a toggle's object only to evaluate it (see
 * `outcome-table.ts` for why that matters at thousands of toggles).
 */
export class ToggleSteps {
  readonly kind: Uint8Array;
  readonly group: Int32Array;
  readonly slot: Int32Array;
  /** The constant outcome's id (negative when not interned: then the object is read). */
  readonly constantId: Int32Array;
  /** 0, 1, … n−1: the order of an answer listing every toggle. */
  readonly all: Int32Array;

  constructor(toggles: readonly CompiledToggle[]) {
    const n = toggles.length;
    this.kind = new Uint8Array(n);
    this.group = new Int32Array(n);
    this.slot = new Int32Array(n);
    this.constantId = new Int32Array(n);
    this.all = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const toggle = toggles[i];
      const constant = toggle.constant;
      this.kind[i] = constant !== undefined ? CONSTANT : toggle.group >= 0 ? REMEMBERED : EVALUATED;
      this.group[i] = toggle.group;
      this.slot[i] = toggle.slot;
      this.constantId[i] = constant?.id ?? -1;
      this.all[i] = i;
    }
  }
}
