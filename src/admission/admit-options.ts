import { isAbortSignal } from '../abort-signal.js';
import { describeValue, InvalidArgumentError } from '../errors.js';

/** BoundedAdmission.admit()'s options, each read once; malformed: OMNI_ERR_INVALID_ARGUMENT. */
export interface AdmitOptions {
  /** The caller's signal: aborting removes the waiter at once (not counted as a refusal). */
  readonly signal?: AbortSignal | undefined;
  /**
   * Give up after this many milliseconds with OMNI_ERR_TIMEOUT (counted as a refusal). Any
   * value >= 0 is honoured, beyond setTimeout's 2^31-1 ms too; Infinity means no timeout.
   */
  readonly timeoutMs?: number | undefined;
}

/**
 * admit()'s options, checked before anything is queued or counted: the OMNI_ERR_INVALID_ARGUMENT
 * to reject with, or undefined when they are usable. The caller reads each option once and
 * passes the values: a getter could answer otherwise on a second read.
 */
export function invalidAdmitOptions(signal: unknown, timeoutMs: unknown): InvalidArgumentError | undefined {
  if (signal !== undefined && !isAbortSignal(signal)) {
    return new InvalidArgumentError(
      `signal must be an AbortSignal (a Proxy of one is refused), got ${describeValue(signal)}`,
    );
  }
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs >= 0)) {
    return new InvalidArgumentError(
      `timeoutMs must be a number >= 0 (Infinity: no timeout), got ${describeValue(timeoutMs)}`,
    );
  }
  return undefined;
}
