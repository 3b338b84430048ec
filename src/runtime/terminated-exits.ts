import type { ThreadEnds } from './thread-ends.js';
import { within } from './within.js';

/**
 * Waits for the exits of threads the runtime has terminated, at most `timeoutMs`. A terminated
 * thread runs no more of the worker's JavaScript, but one inside a native call (a blocking read,
 * a driver's init, a native cleanup hook) exits only once that call returns, perhaps never: past
 * the bound close() or start() settles all the same, with an OmniRuntimeWarning. Resolves true
 * when every thread has exited, false past that bound.
 */
export async function exitedWithin(exits: Iterable<Promise<unknown>>, timeoutMs: number): Promise<boolean> {
  if ((await within(Promise.all(exits), timeoutMs)) !== undefined) return true;
  process.emitWarning(`a terminated worker thread did not exit within ${timeoutMs} ms`, 'OmniRuntimeWarning');
  return false;
}

/**
 * Tells `ends` that every thread has exited: at once when `exitedWithin` saw them all exit
 * (`allExited`), else once `exits` (those not seen) have. Not before: one still in a native
 * call may be using what it holds. Never, for one that never exits.
 */
export function stoppedOnceExited(
  ends: ThreadEnds | undefined,
  allExited: boolean,
  exits: Iterable<Promise<void>>,
): void {
  if (ends === undefined) return;
  if (allExited) {
    ends.stopped();
    return;
  }
  void Promise.all(exits).then(() => ends.stopped());
}
