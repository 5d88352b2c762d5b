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
   * Pieces: for the toggle at `evaluated[j]` and an interned outcome id, that outcome's entry and
   * `runs[j + 1]` joined, made as they are met (`PIECES` per toggle at most): an answer then copies
   * one piece where it would copy two (each copy has a fixed cost of its own, the most of a short
   * entry's). `pieceIds[PIECES * j + k]` is the id of `pieces[PIECES * j + k]`, -1 for a free slot.
   */
  readonly pieceIds: Int32Array;
  readonly pieces: (Buffer | undefined)[];
  /** What the template costs the memo budget, its pieces included. */
  bytes: number;
}

/** Pieces kept per evaluated toggle of a template, at most (its outcomes: off, on and a few variants). */
export const PIECES = 4;

/** The piece of the toggle at `evaluated[j]` for the interned outcome `id`; undefined when none was made. */
export function pieceOf(template: AnswerTemplate, j: number, id: number): Buffer | undefined {
  const ids = template.pieceIds;
  for (let k = PIECES * j; k < PIECES * j + PIECES; k++) {
    if (ids[k] === id) return template.pieces[k];
    if (ids[k] < 0) return undefined;
  }
  return undefined;
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
  // per evaluated toggle: its index, and its piece slots (an id and a reference each)
  let bytes = TEMPLATE_OVERHEAD + 2 * signature.length + (4 + 12 * PIECES) * evaluated + 8 * usage;
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
   * Adds a piece (`AnswerTemplate.pieces`) of `bytes` to a kept template; false when the template is
   * no longer kept or its toggle has no free slot (the caller gives the bytes back then).
   */
  addPiece(template: AnswerTemplate, j: number, id: number, piece: Buffer, bytes: number): boolean {
    if (this.kept.get(template.signature) !== template) return false;
    const ids = template.pieceIds;
    for (let k = PIECES * j; k < PIECES * j + PIECES; k++) {
      if (ids[k] >= 0) continue;
      ids[k] = id;
      template.pieces[k] = piece;
      template.bytes += bytes;
      this.bytes += bytes;
      return true;
    }
    return false;
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
