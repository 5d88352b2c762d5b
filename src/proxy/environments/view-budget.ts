/** Project views kept by one app, every environment together. */
export const MAX_PROJECT_VIEWS = 256;
/** Toggles the kept project views may hold together (each view compiles its own plan of them). */
export const MAX_PROJECT_VIEW_TOGGLES = 50_000;

interface Kept<T> {
  readonly owner: object;
  readonly value: T;
  weight: number;
  readonly drop: (value: T) => void;
}

/**
 * The project views of one app, every environment together, least recently used first: at most
 * `maxViews`, holding at most `maxWeight` toggles together (a view's weight is the number of
 * toggles it holds, read again whenever it is used). Beyond either, the least recently used view
 * is dropped (its usage handed over, its memory given back) and built again when next used.
 */
export class ViewBudget<T> {
  private readonly kept = new Map<string, Kept<T>>();
  private readonly owners = new WeakMap<object, number>();
  private nextOwner = 0;
  private weight = 0;

  constructor(
    readonly maxViews = MAX_PROJECT_VIEWS,
    readonly maxWeight = MAX_PROJECT_VIEW_TOGGLES,
  ) {}

  get size(): number {
    return this.kept.size;
  }

  /** The view `key` of `owner` (an environment), built when not kept; `weigh` tells its toggles. */
  get(owner: object, key: string, build: () => T, weigh: (value: T) => number, drop: (value: T) => void): T {
    const id = `${this.ownerId(owner)}\u0002${key}`;
    const found = this.kept.get(id);
    if (found) {
      this.kept.delete(id);
      this.kept.set(id, found);
      this.reweigh(found, weigh(found.value));
      this.trim(id);
      return found.value;
    }
    const kept: Kept<T> = { owner, value: build(), weight: 0, drop };
    this.kept.set(id, kept);
    this.reweigh(kept, weigh(kept.value));
    this.trim(id);
    return kept.value;
  }

  /** Drops every view of `owner` (an environment closing). */
  dropAll(owner: object): void {
    for (const [id, kept] of [...this.kept]) {
      if (kept.owner === owner) this.dropKept(id, kept);
    }
  }

  private ownerId(owner: object): number {
    let id = this.owners.get(owner);
    if (id === undefined) {
      id = this.nextOwner++;
      this.owners.set(owner, id);
    }
    return id;
  }

  private reweigh(kept: Kept<T>, weight: number): void {
    this.weight += weight - kept.weight;
    kept.weight = weight;
  }

  /** Drops the least recently used views until both bounds hold; the one just used (`keep`) stays. */
  private trim(keep: string): void {
    while (this.kept.size > this.maxViews || (this.weight > this.maxWeight && this.kept.size > 1)) {
      const [id, oldest] = this.kept.entries().next().value as [string, Kept<T>];
      if (id === keep) break;
      this.dropKept(id, oldest);
    }
  }

  private dropKept(id: string, kept: Kept<T>): void {
    this.kept.delete(id);
    this.weight -= kept.weight;
    kept.drop(kept.value);
  }
}
