/**
 * How a call that ends before it reaches a worker ends for its caller: the error it rejects
 * with, counted in the outcome that says why, so the outcomes still add up to the calls made.
 * Only refusal paths come here: an admitted call's run() never does.
 */
import { signalReason } from '../abort-signal.js';
import type { BoundedAdmission } from '../admission/index.js';
import {
  AbortError,
  ClosedError,
  DeadlineError,
  hasCode,
  type RefusalReason,
  RejectedError,
  TimeoutError,
  TooLargeError,
  UnavailableError,
} from '../errors.js';
import type { Outcomes } from './pending-task.js';
import type { RuntimeState } from './report.js';

/** The caller's signal had aborted before anything was dispatched. */
export function abortedBeforeDispatch(signal: AbortSignal, outcomes: Outcomes): AbortError {
  outcomes.aborted++;
  return new AbortError('the caller aborted before the call', { cause: signalReason(signal) });
}

/** The admission refused the call (tryAdmit, or a cost that never fits while waiting). */
export function refused(
  reason: RefusalReason,
  cost: number,
  admission: BoundedAdmission,
  state: RuntimeState,
  outcomes: Outcomes,
): Error {
  // Closed under a call that found the runtime ready (its own options getter closed it): told
  // OMNI_ERR_UNAVAILABLE, and counted so, as a waiting call that close() wakes is.
  if (reason === 'closed') {
    outcomes.unavailable++;
    return new UnavailableError(state);
  }
  outcomes.refused++;
  if (reason === 'too-large') return new TooLargeError(cost, admission.report().unitCapacity ?? 0);
  return new RejectedError(reason, admission.report());
}

/** A wait for admission ended without a permit: its deadline, close(), a refusal, or an abort. */
export function waitFailed(
  err: unknown,
  cost: number,
  admission: BoundedAdmission,
  state: RuntimeState,
  outcomes: Outcomes,
): unknown {
  if (err instanceof TimeoutError) {
    outcomes.deadline++;
    return new DeadlineError('deadline passed while waiting for admission');
  }
  if (err instanceof ClosedError) {
    outcomes.unavailable++;
    return new UnavailableError(state);
  }
  if (err instanceof TooLargeError) return refused('too-large', cost, admission, state, outcomes);
  if (hasCode(err, 'OMNI_ERR_ABORTED')) outcomes.aborted++;
  // OMNI_ERR_INVALID_COST, or any other error of the wait's (a signal that takes no listener
  // throws as it is followed: run() follows it first, before admission, so not from here).
  // Uncounted, the outcomes fell short of the calls.
  else outcomes.invalid++;
  return err;
}
