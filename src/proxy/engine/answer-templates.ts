import { sameItems } from '../../common/lists/same-items';
import { murmurHash32 } from '../upstream/murmur-hash';
import type { Outcome } from './outcomes';

/**
 * The part of an answer listing every toggle (`/proxy`, `/proxy/all`) that does not depend on who
 * asks: for one combination of memo keys (every memo group's key for the context, or none), the
 * entries of the constant toggles and of the remembered ones, joined in answer order into runs
 * between the toggles that are evaluated on every request. A new user whose other fields were seen
 * before (the usual case: many users, few values of plan, region, app) is answered by evaluating
 * only those toggles and copying the runs around them, instead of visiting every toggle.
 *
 * It holds nothing the memo does not prove: a remembered toggle is in a run only when its memo row
 * for the key holds its outcome (a pure function of the key within the revision), and a template
 * lives and dies with its revision.
 */
export interface AnswerTemplate {
  /** Its signature (`templateSignature`). */
  readonly signature: string;
  /** The toggles evaluated per request, as indices into `Plan.toggles`, in answer order. */
  readonly evaluated: Int32Array;
  /**
   * `runs[j]`: the entries before `evaluated[j]` (after `evaluated[j - 1]`), joined with commas;
   * `runs[evaluated.length]`: those after the last. Empty when there are none.
   */
  readonly runs: readonly Buffer[];
  /** The outcomes of the remembered toggles in the runs, counted once per answer (constants are counted apart). */
  readonly usage: readonly Outcome[];
  /**
   * Pieces: the evaluated toggles in units of `UNIT` in answer order (unit `u`: `evaluated[UNIT * u]`
   * and the ones after it), and for one combination of their outcomes, their entries and the runs
   * after each joined into one piece (empty when none of them is listed and the runs are empty),
   * made as they are met: an answer then copies one piece where it would copy up to `2 × UNIT`
   * (each copy has a fixed cost of its own, the most of a short entry's). An outcome is named by
   * its place among its toggle's outcomes (`OutcomePlaces`, below `PLACES`), so a unit's piece is
   * `pieces[UNIT_PIECES * u + slot]`, found without a search (`slot`: the unit's places in base
   * `PLACES`).
   */
  readonly pieces: (Buffer | undefined)[];
  /** What the template costs the memo budget, its pieces included. */
  bytes: number;
}

/** Evaluated toggles per unit of a template's pieces. */
export const UNIT = 2;
/** Outcomes of one toggle a piece can name (off, on and two variants); a unit with another has no piece. */
export const PLACES = 4;
/** Piece slots per unit: every combination of its toggles' places. */
export const UNIT_PIECES = PLACES ** UNIT;

/** Units of a template evaluating `evaluated` toggles. */
export const unitsOf = (evaluated: number): number => Math.ceil(evaluated / UNIT);

const UNKNOWN_PLACE = -2;
/** An outcome past its toggle's first `PLACES`: a unit with it has no piece. */
export const NO_PLACE = -1;

/**
 * The place of each interned outcome among its toggle's outcomes, in the order they are met
 * (0, 1, …): learnt once per outcome, read by id. A place at or above `PLACES` is not kept
 * (`NO_PLACE`). One per revision: outcome ids are the revision's.
 */
export class OutcomePlaces {
  private places = new Int8Array(256).fill(UNKNOWN_PLACE);
  private readonly met: Uint8Array;

  constructor(toggles: number) {
    this.met = new Uint8Array(toggles);
  }

  /** The place of outcome `id` of toggle `index`. */
  of(index: number, id: number): number {
    const known = id < this.places.length ? this.places[id] : UNKNOWN_PLACE;
    return known !== UNKNOWN_PLACE ? known : this.learn(index, id);
  }

  private learn(index: number, id: number): number {
    if (id >= this.places.length) {
      const places = new Int8Array(Math.max(id + 1, 2 * this.places.length)).fill(UNKNOWN_PLACE);
      places.set(this.places);
      this.places = places;
    }
    const met = this.met[index];
    const place = met < PLACES ? met : NO_PLACE;
    if (met < PLACES) this.met[index] = met + 1;
    this.places[id] = place;
    return place;
  }
}

/** Per-template overhead counted besides its runs, indices and usage list. */
const TEMPLATE_OVERHEAD = 256;

/** What a template costs the memo budget. */
export const templateBytes = (
  signature: string,
  runs: readonly Buffer[],
  evaluated: number,
  usage: number,
): number => {
  // per evaluated toggle its index, per unit its piece slots (a reference each)
  let bytes =
    TEMPLATE_OVERHEAD +
    2 * signature.length +
    4 * evaluated +
    8 * UNIT_PIECES * unitsOf(evaluated) +
    8 * usage;
  for (const run of runs) bytes += run.length + 64;
  return bytes;
};

/** Templates per revision, at most (contexts differ mostly by user; few combinations of the rest). */
const MAX_TEMPLATES = 64;
/** Signatures remembered as seen once (as 32-bit hashes), at most, before the list starts over. */
const MAX_SEEN = 1024;
/** Longest signature kept (characters): a context with longer memo keys in all is answered without a template. */
const MAX_SIGNATURE_LENGTH = 8192;

/**
 * The templates of one definitions revision by signature (the selection and every memo group's
 * key: `signature`), each kept on its second sighting, oldest forgotten first. Their bytes are
 * counted by the evaluator in its memo budget.
 */
export class AnswerTemplates {
  private readonly kept = new Map<string, AnswerTemplate>();
  /**
   * Hashes of signatures seen once: a fixed few KB whatever the signatures' length. Two signatures
   * with one hash only make a template a sighting early; a template is found by its whole signature.
   */
  private readonly seenOnce = new Set<number>();
  /** Bytes of the kept templates. */
  bytes = 0;
  /** The last signature made (`signature`) and what it was made of. */
  private lastKind = '';
  private lastKeys: readonly (string | undefined)[] = [];
  private lastSignature: string | undefined = undefined;

  /**
   * `templateSignature(kind, groupKeys)`, the request before's string when its parts are the same
   * (memo keys found again are the same strings, `LastKeys`): its hash is known, so the lookup
   * does not read it again.
   */
  signature(kind: string, groupKeys: readonly (string | undefined)[]): string | undefined {
    if (kind === this.lastKind && sameItems(groupKeys, this.lastKeys)) return this.lastSignature;
    const signature = templateSignature(kind, groupKeys);
    this.lastKind = kind;
    this.lastKeys = groupKeys;
    this.lastSignature = signature;
    return signature;
  }

  get size(): number {
    return this.kept.size;
  }

  get(signature: string): AnswerTemplate | undefined {
    return this.kept.get(signature);
  }

  /** True on a signature's second sighting (and later ones while it is not kept): time to make its template. */
  admit(signature: string): boolean {
    const hash = murmurHash32(signature);
    if (this.seenOnce.has(hash)) return true;
    if (this.seenOnce.size >= MAX_SEEN) this.seenOnce.clear();
    this.seenOnce.add(hash);
    return false;
  }

  /** False when the revision holds as many templates as it may (the caller forgets the oldest first). */
  get hasRoom(): boolean {
    return this.kept.size < MAX_TEMPLATES;
  }

  /**
   * Adds a piece (`AnswerTemplate.pieces`) of `bytes` in slot `slot` of a kept template; false when
   * the template is no longer kept or the slot holds one (the caller gives the bytes back then).
   */
  addPiece(template: AnswerTemplate, slot: number, piece: Buffer, bytes: number): boolean {
    if (this.kept.get(template.signature) !== template || template.pieces[slot] !== undefined) return false;
    template.pieces[slot] = piece;
    template.bytes += bytes;
    this.bytes += bytes;
    return true;
  }

  set(signature: string, template: AnswerTemplate): void {
    this.kept.set(signature, template);
    this.seenOnce.delete(murmurHash32(signature));
    this.bytes += template.bytes;
  }

  /** Forgets the oldest template; its bytes, or 0 when none is kept. */
  forgetOldest(): number {
    const oldest = this.kept.entries().next();
    if (oldest.done) return 0;
    const [signature, template] = oldest.value;
    this.kept.delete(signature);
    this.bytes -= template.bytes;
    return template.bytes;
  }

  /** Forgets every template (the revision is retired). */
  clear(): void {
    this.kept.clear();
    this.seenOnce.clear();
    this.bytes = 0;
  }
}

/**
 * The signature of a request listing every toggle: its selection and, per memo group, the key of
 * the context (or none). Two requests with one signature have the same outcome for every constant
 * and remembered toggle. Undefined when it would be longer than `MAX_SIGNATURE_LENGTH` (no template).
 */
export function templateSignature(
  kind: string,
  groupKeys: readonly (string | undefined)[],
): string | undefined {
  // lengths first: a key may hold any character
  let signature = kind;
  for (const key of groupKeys) {
    signature += key === undefined ? '|-' : `|${key.length}:${key}`;
    if (signature.length > MAX_SIGNATURE_LENGTH) return undefined;
  }
  return signature;
}
