import type { Context } from 'unleash-client';
import { isDeterministic } from './determinism';
import type { MemoGroup, MemoRow } from './memo-groups';

/** Per-row overhead counted against the memo budget besides the key's characters and the slots. */
const MEMO_ENTRY_BYTES = 96;

/** What one memo row is counted as: its key, its overhead and 8 bytes per slot (an id, and its share of the array). */
export const rowBytes = (key: string, group: MemoGroup): number =>
  2 * key.length + MEMO_ENTRY_BYTES + 8 * group.size;

/**
 * The key of a context for a toggle's memo: the root value and the property of each input field,
 * length-prefixed so no two different combinations share a key. Undefined when longer than
 * `maxLength`: such a context is evaluated and not remembered.
 */
export function memoKey(inputs: readonly string[], context: Context, maxLength: number): string | undefined {
  const root = context as Record<string, unknown>;
  const properties = context.properties as Record<string, unknown> | undefined;
  let key = '';
  for (const field of inputs) {
    const value = root[field];
    const property = properties?.[field];
    key += typeof value === 'string' ? `${value.length}:${value}` : '-';
    key += typeof property === 'string' ? `${property.length}:${property}` : '-';
    if (key.length > maxLength) return undefined;
  }
  return key;
}

/** A field's value as `memoKey` reads it: a string, or nothing. */
const asRead = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** One group's last memo key and the values it was made of (root and property of each input field). */
interface LastKey {
  readonly values: (string | undefined)[];
  readonly maxLength: number;
  readonly key: string;
  /** The key with the clock's window (`key@window`), for a group that reads the clock. */
  window: string | undefined;
  windowed: string;
}

/**
 * Each memo group's last key, kept from one request to the next of a revision: consecutive new
 * users mostly share every field but their ids, so a group's key is found by comparing the values
 * it is made of instead of writing it again, and it is the same string as the request before (its
 * hash known, so the memo's and the templates' maps find it without reading it). Only a key that
 * was made is kept (one within the memo key's length limit): its values are at most that long.
 */
export class LastKeys {
  private readonly last: (LastKey | undefined)[];

  constructor(groups: number) {
    this.last = new Array<LastKey | undefined>(groups).fill(undefined);
  }

  /** `memoKey(inputs, context, maxLength)`, the last request's string when its values are the same. */
  plain(group: number, inputs: readonly string[], context: Context, maxLength: number): string | undefined {
    const root = context as Record<string, unknown>;
    const properties = context.properties as Record<string, unknown> | undefined;
    const last = this.last[group];
    if (last !== undefined && last.maxLength === maxLength) {
      const values = last.values;
      let same = true;
      for (let f = 0; f < inputs.length; f++) {
        const field = inputs[f];
        if (asRead(root[field]) !== values[2 * f] || asRead(properties?.[field]) !== values[2 * f + 1]) {
          same = false;
          break;
        }
      }
      if (same) return last.key;
    }
    const key = memoKey(inputs, context, maxLength);
    if (key === undefined) {
      this.last[group] = undefined;
      return undefined;
    }
    const values: (string | undefined)[] = [];
    for (const field of inputs) values.push(asRead(root[field]), asRead(properties?.[field]));
    this.last[group] = { values, maxLength, key, window: undefined, windowed: '' };
    return key;
  }

  /** `${key}@${window}` for the group's last key (`plain`), the same string while the window is. */
  windowed(group: number, key: string, window: string): string {
    const last = this.last[group];
    if (last === undefined || last.key !== key) return `${key}@${window}`;
    if (last.window !== window) {
      last.window = window;
      last.windowed = `${key}@${window}`;
    }
    return last.windowed;
  }
}

/** Not computed yet, in `MemoKeys`' per-group array. */
const UNKNOWN = null;

/**
 * What one request computes once for all its toggles: per memo group (`Plan.groups`: toggles with
 * the same input fields and determinism), whether results are remembered for this context and under
 * which key (with the clock's window when the group reads the clock; the request before's string
 * when its values are the same, `LastKeys`); and the checks of chance guards (random strategies'
 * constraints), by the guard's constraints.
 */
export class MemoKeys {
  private readonly groupKeys: (string | undefined | typeof UNKNOWN)[];
  private readonly rows: (MemoRow | undefined | typeof UNKNOWN)[];
  readonly guards = new Map<string, boolean>();

  constructor(
    private readonly groups: readonly MemoGroup[],
    private readonly context: Context,
    private readonly window: string | undefined,
    private readonly maxLength: number,
    /**
     * The context passed the determinism of every toggle of the plan (`Plan.determinism`, the
     * union of every group's, with the clock's window when it reads the clock): then it passes
     * each group's, which is not checked again.
     */
    private readonly deterministic: boolean,
    /** The revision's keys of the request before, reused when the values are the same. */
    private readonly last: LastKeys,
  ) {
    this.groupKeys = new Array<string | undefined | typeof UNKNOWN>(groups.length).fill(UNKNOWN);
    this.rows = new Array<MemoRow | undefined | typeof UNKNOWN>(groups.length).fill(UNKNOWN);
  }

  /** The group's remembered row for its key (`ofGroup`), looked up once per request. */
  rowOf(group: number, key: string): MemoRow | undefined {
    const known = this.rows[group];
    if (known !== UNKNOWN) return known;
    const row = this.groups[group].memo.get(key);
    this.rows[group] = row;
    return row;
  }

  /** Every group's key for the context (undefined for a group not remembered for it), in group order. */
  all(): (string | undefined)[] {
    const keys: (string | undefined)[] = [];
    for (let group = 0; group < this.groups.length; group++) keys.push(this.ofGroup(group));
    return keys;
  }

  /** The group's row for its key as the memo holds it now (not the request's first look). */
  currentRow(group: number, key: string): MemoRow | undefined {
    return this.groups[group].memo.get(key);
  }

  /** Notes a row made for the group's key during this request. */
  keepRow(group: number, row: MemoRow): void {
    this.rows[group] = row;
  }

  /** The memo key of the context for a toggle of this group; undefined when not remembered. */
  ofGroup(group: number): string | undefined {
    const known = this.groupKeys[group];
    if (known !== UNKNOWN) return known;
    const { inputs, determinism } = this.groups[group];
    const clocked = determinism.currentTime && this.window !== undefined;
    let key: string | undefined;
    if (this.deterministic || isDeterministic(determinism, this.context, clocked, this.guards)) {
      key = this.last.plain(group, inputs, this.context, this.maxLength);
      if (key !== undefined && clocked) key = this.last.windowed(group, key, this.window ?? '');
    }
    this.groupKeys[group] = key;
    return key;
  }
}
