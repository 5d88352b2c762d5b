import { SharedBudget } from '../budgets/shared-budget';
import { Doorkeeper, type SharedAnswerBudget } from './answer-cache';
import { BodyBuffers } from './body-buffers';

/**
 * The memory budgets of evaluation, for one app (every environment and project view together);
 * none depends on the size of what clients send.
 */
export interface EvaluationBudgets {
  /** Bytes of whole answers kept for contexts seen at least twice. */
  answerCacheBytes: number;
  /** Whole answers kept, at most. */
  answerCacheEntries: number;
  /** Bytes of remembered per-toggle results (rows of memo groups: keys and slots), all toggles together. */
  memoBytes: number;
  /** Longest memo key (the values of a toggle's input fields); longer contexts are evaluated, not remembered. */
  memoKeyMaxLength: number;
}

export const DEFAULT_BUDGETS: EvaluationBudgets = {
  answerCacheBytes: 32 * 1024 * 1024,
  answerCacheEntries: 10_000,
  memoBytes: 16 * 1024 * 1024,
  memoKeyMaxLength: 256,
};

/**
 * The evaluation memory of one app, shared by every evaluator in it (each environment and each
 * project view): one answer-cache budget with its doorkeeper, one memo budget and one pool of
 * body buffers. An app has one; two apps in one process have one each.
 */
export class EvaluationMemory {
  readonly answers: SharedAnswerBudget;
  readonly memo: SharedBudget;
  readonly bodies = new BodyBuffers();

  constructor(readonly budgets: EvaluationBudgets = DEFAULT_BUDGETS) {
    this.answers = {
      budget: new SharedBudget(budgets.answerCacheBytes, budgets.answerCacheEntries),
      doorkeeper: new Doorkeeper(budgets.answerCacheEntries),
    };
    this.memo = new SharedBudget(budgets.memoBytes);
  }
}
