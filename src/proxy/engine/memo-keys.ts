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

/** Not computed yet, in `MemoKeys`' per-group array. */
const UNKNOWN = null;

/**
 * What one request computes once for all its toggles: per memo group (`Plan.groups`: toggles with
 * the same input fields and determinism), whether results are remembered for this context and under
 * which key (with the clock's window when the group reads the clock); memo keys by input-field list;
 * and the checks of chance guards (random strategies' constraints), by the guard's constraints.
 */
export class MemoKeys {
  private readonly plain = new Map<readonly string[], string | undefined>();
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
    private readonly deterministic = false,
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
      key = this.plain.get(inputs);
      if (key === undefined && !this.plain.has(inputs)) {
        key = memoKey(inputs, this.context, this.maxLength);
        this.plain.set(inputs, key);
      }
      if (key !== undefined && clocked) key = `${key}@${this.window ?? ''}`;
    }
    this.groupKeys[group] = key;
    return key;
  }
}
