/**
 * setTimeout for any delay >= 0. Node fires a timer whose delay exceeds 2^31-1 ms after 1 ms
 * (with a TimeoutOverflowWarning), which would turn a long deadline or timeout into an instant
 * one; longer delays here re-arm in steps instead. Infinity never fires.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A timer longer than one setTimeout can hold: the step currently armed. */
class SteppedTimer {
  step: ReturnType<typeof setTimeout> | undefined;
  /** Every step is armed unref'd (see unrefLongTimeout). */
  unref = false;
}

export type LongTimer = ReturnType<typeof setTimeout> | SteppedTimer | undefined;

/** Calls fn(arg) after `ms` (>= 0). Delays within one timer cost exactly one setTimeout. */
export function setLongTimeout<T>(fn: (arg: T) => void, ms: number, arg: T): LongTimer {
  if (ms <= MAX_TIMER_MS) return setTimeout(fn, ms, arg);
  if (ms === Number.POSITIVE_INFINITY) return undefined;
  const timer = new SteppedTimer();
  const arm = (remaining: number): void => {
    const delay = Math.min(remaining, MAX_TIMER_MS);
    timer.step = setTimeout(() => (remaining > delay ? arm(remaining - delay) : fn(arg)), delay);
    if (timer.unref) timer.step.unref();
  };
  arm(ms);
  return timer;
}

export function clearLongTimeout(timer: LongTimer): void {
  clearTimeout(timer instanceof SteppedTimer ? timer.step : timer);
}

/**
 * Lets the process end while `timer` is armed, for its whole length: a stepped timer's later
 * steps are armed unref'd too (unref on the step armed now would hold only until it re-arms).
 */
export function unrefLongTimeout(timer: LongTimer): void {
  if (timer instanceof SteppedTimer) {
    timer.unref = true;
    timer.step?.unref();
  } else {
    timer?.unref();
  }
}
