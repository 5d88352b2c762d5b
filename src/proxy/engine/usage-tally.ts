import type { Outcome } from './outcomes';

/** Where counted usage goes: `times` evaluations of toggle `name` to `enabled` with `variant`. */
export type UsageSink = (name: string, enabled: boolean, variant: string, times: number) => void;

/** Kept answers counted but not yet handed over; more are handed over first. */
const MAX_PENDING_ANSWERS = 1024;

/**
 * The usage counts of one definitions revision, batched so counting costs an array increment: an
 * evaluation adds one to its outcome's slot (outcomes of a revision are numbered as `outcomes.ts`
 * interns them), a kept answer adds its whole list of outcomes at once. `flush` hands everything to
 * the sink (the SDK's metrics bucket) just before the SDK sends it, and when the revision is
 * replaced. Memory: one number per interned outcome and at most 1,024 pending answers.
 */
export class UsageTally {
  private counts: number[] = [];
  private readonly answers = new Map<readonly Outcome[], number>();

  constructor(
    /** The revision's interned outcomes, by `Outcome.id`. */
    private readonly outcomes: readonly Outcome[],
    private readonly sink: UsageSink,
  ) {}

  /** One evaluation of a toggle with this outcome. */
  count(outcome: Outcome): void {
    const { id } = outcome;
    if (id < 0) {
      this.sink(outcome.name, outcome.enabled, outcome.variant, 1);
      return;
    }
    this.countId(id);
  }

  /** One evaluation of a toggle with the interned outcome of this id (`Outcome.id` ≥ 0). */
  countId(id: number): void {
    const counts = this.counts;
    while (counts.length <= id) counts.push(0);
    counts[id] += 1;
  }

  /** One request answered with a kept answer: one evaluation of each of its outcomes. */
  countAnswer(outcomes: readonly Outcome[]): void {
    this.answers.set(outcomes, (this.answers.get(outcomes) ?? 0) + 1);
    if (this.answers.size > MAX_PENDING_ANSWERS) this.flush();
  }

  /** Hands every pending count to the sink. */
  flush(): void {
    const counts = this.counts;
    for (const [answer, times] of this.answers) {
      for (const outcome of answer) {
        if (outcome.id < 0) this.sink(outcome.name, outcome.enabled, outcome.variant, times);
        else {
          while (counts.length <= outcome.id) counts.push(0);
          counts[outcome.id] += times;
        }
      }
    }
    this.answers.clear();
    this.counts = [];
    for (let id = 0; id < counts.length; id++) {
      const times = counts[id];
      if (times > 0) {
        const outcome = this.outcomes[id];
        this.sink(outcome.name, outcome.enabled, outcome.variant, times);
      }
    }
  }
}
