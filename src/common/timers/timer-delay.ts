/**
 * The longest delay a Node timer holds: 2^31-1 ms (about 24.8 days). A longer one (or one that is
 * not a number) is not refused by `setTimeout`/`setInterval`: it fires after 1 ms with a
 * `TimeoutOverflowWarning`, so an interval of a month would run a thousand times a second.
 */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/**
 * `ms` as a timer can hold it: configured intervals are bounded far below this where they are read
 * (each option's maximum); this is the seam's own guard, so that no path reaches a timer with a
 * delay Node would turn into 1 ms. Too long or not a number waits the longest a timer can; below
 * zero waits none.
 */
export function timerDelay(ms: number): number {
  if (Number.isNaN(ms) || ms > MAX_TIMER_DELAY_MS) return MAX_TIMER_DELAY_MS;
  return ms < 0 ? 0 : ms;
}
