import type { Context } from 'unleash-client';
import { PreparedKey } from '../../upstream/murmur-hash';

/**
 * A context field's value as `unleash-client` 6 reads it for constraints, custom stickiness and
 * overrides (`helpers.resolveContextValue`): the root field, else the property of that name, as a
 * string; undefined when both are missing or null.
 */
export function contextValue(context: Context, field: string): string | undefined {
  const value: unknown =
    (context as Record<string, unknown>)[field] ??
    (context.properties as Record<string, unknown> | undefined)?.[field];
  return value !== undefined && value !== null ? String(value) : undefined;
}

/**
 * A flexible rollout's default sticky value (`stickiness: default`): `userId`, else `sessionId`;
 * undefined when neither is truthy (the SDK throws its die).
 */
export function defaultSticky(userId: unknown, sessionId: unknown): unknown {
  return userId || sessionId || undefined;
}

/**
 * The SDK's default variant seed (`variantSeed` without a field): the first non-empty string of
 * `userId`, `sessionId` and `remoteAddress`; undefined when none is.
 */
export function variantSeedOf(
  userId: unknown,
  sessionId: unknown,
  remoteAddress: unknown,
): string | undefined {
  if (typeof userId === 'string' && userId !== '') return userId;
  if (typeof sessionId === 'string' && sessionId !== '') return sessionId;
  if (typeof remoteAddress === 'string' && remoteAddress !== '') return remoteAddress;
  return undefined;
}

/** Keys a request prepares for hashing in reused objects (`RequestScope.key`). */
const MAX_KEYS = 8;
/**
 * Longest value prepared in a reused object: the memory a reused key keeps is its longest value's,
 * so a client's long id is prepared in memory of its own, dropped with the request.
 */
const MAX_REUSED_LENGTH = 256;

const TRUE = 1;
const FALSE = 2;

/** Field names the engine reads through `RequestScope.value`, numbered process-wide; at most this many. */
const MAX_FIELDS = 4096;
const FIELD_INDEX = new Map<string, number>();

/**
 * The number of a context field the engine reads (stickiness, variant seeds, overrides), for
 * `RequestScope.value`; -1 once `MAX_FIELDS` names are numbered (definitions come and go: such a
 * field is read from the context every time, never remembered).
 */
export function fieldIndex(field: string): number {
  let index = FIELD_INDEX.get(field);
  if (index === undefined) {
    if (FIELD_INDEX.size >= MAX_FIELDS) return -1;
    index = FIELD_INDEX.size;
    FIELD_INDEX.set(field, index);
  }
  return index;
}

/**
 * What one request computes once and shares among every compiled toggle it evaluates: the result
 * of each distinct check of the revision (`Checks`), by check id, and each field value read
 * (`value`), by field number; and the root fields the built-in strategies read, taken from the
 * context once (one object shape for every request, whatever the shape of its context). A request
 * is evaluated synchronously from `begin` to its last toggle, so one scope per revision serves
 * every request; `begin` forgets the previous request's results (by counting requests, not by
 * clearing).
 */
export class RequestScope {
  private stamps: Uint32Array;
  private results: Uint8Array;
  private valueStamps = new Uint32Array(16);
  private values: (string | undefined)[] = [];
  private request = 0;
  /** Keys prepared for hashing (`key`): the first `keysUsed` during the request `keysOf` names. */
  private readonly keys: PreparedKey[] = [];
  private keysUsed = 0;
  private keysOf = 0;
  /** The request's prepared default sticky value and default variant seed (`stickyKey`, `seedKey`); null: none. */
  private stickyPrepared: PreparedKey | null | undefined = undefined;
  private seedPrepared: PreparedKey | null | undefined = undefined;
  /** Per field number, the request's value prepared for hashing (`fieldKey`); null: empty or missing. */
  private fieldKeyStamps = new Uint32Array(16);
  private fieldKeys: (PreparedKey | null)[] = [];
  context: Context = {};
  /** The context's root fields as the SDK's built-in strategies read them. */
  userId: unknown = undefined;
  sessionId: unknown = undefined;
  featureToggle: unknown = undefined;

  constructor(checks: number) {
    this.stamps = new Uint32Array(checks);
    this.results = new Uint8Array(checks);
  }

  /** Starts a request with `context`. */
  begin(context: Context): void {
    this.context = context;
    this.userId = context.userId;
    this.sessionId = context.sessionId;
    this.featureToggle = (context as Record<string, unknown>).featureToggle;
    this.stickyPrepared = undefined;
    this.seedPrepared = undefined;
    this.request += 1;
    if (this.request === 0xffffffff) {
      this.stamps.fill(0);
      this.valueStamps.fill(0);
      this.fieldKeyStamps.fill(0);
      this.request = 1;
    }
  }

  /** The result of check `id` for this request, computed by `check` the first time. */
  shared(id: number, check: (context: Context) => boolean): boolean {
    if (id >= this.stamps.length) this.grow(id + 1);
    if (this.stamps[id] === this.request) return this.results[id] === TRUE;
    const result = check(this.context);
    this.stamps[id] = this.request;
    this.results[id] = result ? TRUE : FALSE;
    return result;
  }

  /** `contextValue(context, field)` for this request, read once per field (`index`: `fieldIndex(field)`). */
  value(index: number, field: string): string | undefined {
    if (index < 0) return contextValue(this.context, field);
    if (index >= this.valueStamps.length) {
      const stamps = new Uint32Array(Math.max(index + 1, this.valueStamps.length * 2));
      stamps.set(this.valueStamps);
      this.valueStamps = stamps;
    }
    if (this.valueStamps[index] === this.request) return this.values[index];
    const value = contextValue(this.context, field);
    this.valueStamps[index] = this.request;
    this.values[index] = value;
    return value;
  }

  /**
   * `value` prepared for hashing after many prefixes (`hashAfter`): a sticky value or variant seed
   * of this request, prepared once however many rollouts and variant splits hash it. A request
   * keeps up to 8 (user id, session id, a few custom fields) of up to 256 characters, in objects
   * reused by the next requests (each `reset`); others are prepared each time.
   */
  key(value: string): PreparedKey {
    const keys = this.keys;
    if (this.keysOf !== this.request) {
      this.keysUsed = 0;
      this.keysOf = this.request;
    }
    const used = this.keysUsed;
    for (let i = 0; i < used; i++) if (keys[i].key === value) return keys[i];
    if (used >= MAX_KEYS || value.length > MAX_REUSED_LENGTH) return new PreparedKey(value);
    this.keysUsed = used + 1;
    if (used < keys.length) {
      keys[used].reset(value);
      return keys[used];
    }
    const prepared = new PreparedKey(value);
    keys.push(prepared);
    return prepared;
  }

  /**
   * The default sticky value of a flexible rollout (`userId`, else `sessionId`: `rolloutSticky`'s
   * `STICKY_DEFAULT`) prepared for hashing, as the template string the SDK hashes; null when the
   * context has neither (the SDK throws its die). Prepared once per request.
   */
  stickyKey(): PreparedKey | null {
    let prepared = this.stickyPrepared;
    if (prepared === undefined) {
      const value = defaultSticky(this.userId, this.sessionId);
      prepared = value === undefined ? null : this.key(`${value as string}`);
      this.stickyPrepared = prepared;
    }
    return prepared;
  }

  /**
   * The default seed of a variant choice (`variantSeed` without a field: a non-empty `userId`,
   * `sessionId` or `remoteAddress`) prepared for hashing; null when there is none (chance picks).
   * Prepared once per request.
   */
  seedKey(): PreparedKey | null {
    let prepared = this.seedPrepared;
    if (prepared === undefined) {
      const seed = variantSeedOf(this.userId, this.sessionId, this.context.remoteAddress);
      prepared = seed === undefined ? null : this.key(seed);
      this.seedPrepared = prepared;
    }
    return prepared;
  }

  /**
   * `value(index, field)` prepared for hashing; null when it is missing or empty (no rollout is
   * enabled by it, no variant seeded). Prepared once per field per request.
   */
  fieldKey(index: number, field: string): PreparedKey | null {
    if (index < 0) {
      const value = contextValue(this.context, field);
      return value ? this.key(value) : null;
    }
    if (index >= this.fieldKeyStamps.length) {
      const stamps = new Uint32Array(Math.max(index + 1, this.fieldKeyStamps.length * 2));
      stamps.set(this.fieldKeyStamps);
      this.fieldKeyStamps = stamps;
    }
    if (this.fieldKeyStamps[index] === this.request) return this.fieldKeys[index];
    const value = this.value(index, field);
    const prepared = value ? this.key(value) : null;
    this.fieldKeyStamps[index] = this.request;
    this.fieldKeys[index] = prepared;
    return prepared;
  }

  private grow(size: number): void {
    const stamps = new Uint32Array(Math.max(size, this.stamps.length * 2));
    stamps.set(this.stamps);
    const results = new Uint8Array(stamps.length);
    results.set(this.results);
    this.stamps = stamps;
    this.results = results;
  }
}
