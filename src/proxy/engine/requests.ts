import type { Context } from 'unleash-client';
import type { StrategyTransportInterface } from '../upstream/sdk/types';
import type { BodyForms } from './body-forms';
import type { CompiledToggle } from './compiled-toggle';
import type { Outcome } from './outcomes';
import type { Plan } from './plan';

/** Which toggles a request asks for. */
export type Selection = { kind: 'enabled' } | { kind: 'all' } | { kind: 'named'; names: readonly string[] };

/**
 * A request's inputs resolved against one definitions revision (`revision`, -1 when the SDK's full
 * evaluation runs) and clock window: what `Evaluator.answer` needs. It holds no compiled state, so
 * keeping one never keeps an old revision alive.
 */
export interface Prepared {
  readonly revision: number;
  readonly selection: Selection;
  /** The context as given, to prepare again for another revision. */
  readonly context: Context;
  /** The context the SDK evaluates with (its static fields added). */
  readonly enhanced: Context;
  /** The clock's window among the definitions' dates, when the selection's date constraints read the clock. */
  readonly window: string | undefined;
  /** The derived ETag of a pure answer; undefined when only the body can validate it. */
  readonly etag: string | undefined;
}

/** What to write for a request: a toggle list with its validator, or 304 for the client's own copy. */
export type Reply =
  | {
      readonly notModified: false;
      readonly body: string | Buffer;
      readonly etag: string;
      /** Gives the body's memory back for reuse: call once the body was written and is dropped. */
      readonly release?: () => void;
      /** A kept body's other forms (its compressed bytes by encoding), kept with it. */
      readonly forms?: BodyForms;
    }
  | { readonly notModified: true; readonly etag: string };

/** `Outcome.id` of a toggle whose evaluation threw: answered disabled and never counted. */
export const FAILED = -2;

/**
 * An answer listing every toggle in another shape than `/proxy`'s (OFREP's flags), written by the
 * same answer loop (`Evaluator.everyToggle`; `one` for a single toggle) with the shape's own bytes for each toggle.
 */
export interface AnswerShape {
  /** Names the shape in the signatures of answer templates (`answer-templates.ts`). */
  readonly kind: string;
  /**
   * The shape's entries of a revision (kept by the shape, per revision): by interned outcome id,
   * filled by `entry` as outcomes are first seen; and, by toggle index, 1 for a toggle whose entry
   * also depends on the strategy that enabled it (evaluated with it, even when remembered).
   */
  entries(plan: Plan): ShapeEntries;
  /**
   * The entry of a toggle's outcome, with the strategy that enabled it for a `decided` toggle; kept
   * in `byId` for an interned outcome of any other toggle.
   */
  entry(toggle: CompiledToggle, outcome: Outcome, decided: StrategyTransportInterface | undefined): Buffer;
  /** The entry of a toggle the engine did not compile, evaluated by the shape (the loop neither evaluates nor counts it). */
  uncompiled(toggle: CompiledToggle): Buffer;
}

/**
 * A shape's entries of a revision (`AnswerShape.entries`): by interned outcome id, and by toggle
 * index 1 for a toggle evaluated with the strategy that enabled it.
 */
export interface ShapeEntries {
  readonly byId: (Buffer | undefined)[];
  readonly decided: Uint8Array;
}

/** An answer listing every toggle in another shape (`Evaluator.everyToggle`): its entries, or one piece with all of them. */
export interface ShapedAnswer {
  readonly entries: readonly Buffer[];
  readonly bytes: number;
}
