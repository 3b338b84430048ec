/**
 * What a caller hears when piscina rejects a dispatched task (no reply from the worker entry),
 * by what the rejection was and by who gave the capacity back.
 */
import {
  describeThrown,
  describeValue,
  InvalidArgumentError,
  TaskFailedError,
  WorkerExitedError,
} from '../errors.js';
import { carryName } from '../wire-error.js';
import { isCloneRefusal } from './clone-refusal.js';

/**
 * A readable message for any rejection value. A worker's uncaught error crosses threads
 * through Node's error serializer, which keeps name and message for native Errors only; the
 * worker entry rethrows other values as native Errors (workers/uncaught.ts), and whatever
 * still arrives as a plain value is described rather than printed as "[object Object]".
 */
export function messageOf(err: unknown): string {
  try {
    if (err instanceof Error) return String(err.message);
    const message = (err as { message?: unknown } | null)?.message;
    if (typeof message === 'string') return message;
  } catch {
    // The caller's own value (a thread lost while its post failed) may throw as it is read:
    // described below, so that the call still rejects.
  }
  return `the worker failed with a value that is not an Error: ${describeValue(err)}`;
}

/**
 * `reclaimed`: this thread, not the worker, gave the task's capacity back. `threadLost`: a
 * thread was lost (or the pool given up) while the task was out (thread-losses.ts).
 */
export function taskFailure(err: unknown, reclaimed: boolean, threadLost: boolean): Error {
  if (!reclaimed) return named(new TaskFailedError(messageOf(err)), err);
  // The input (or its transfer list) could not be posted: structured clone refused it in this
  // thread (piscina hands back postMessage's own error), so no worker ever saw the task.
  if (isCloneRefusal(err)) return notPosted(err);
  // Nor did one when no thread was lost: piscina rejects a call whose thread died (exit,
  // uncaught error, termination) in the turn it removes that thread, so what failed here is
  // the post itself, in this thread: the caller's own code threw while its input was read (a
  // getter, a move()'s symbols). Its error is no clue, being the caller's: any value, a native
  // Error like piscina's own "worker exited". A thread lost meanwhile leaves it undecided, and
  // a lost thread is the likelier (every call on it fails so).
  if (!threadLost) return notPosted(err);
  return new WorkerExitedError(messageOf(err));
}

/**
 * The worker's error keeps its name, as a handler's thrown error does through the wire
 * (carryName): a result whose post was refused ends the thread with a DataCloneError, and that
 * name is the caller's clue.
 */
function named(failed: TaskFailedError, err: unknown): TaskFailedError {
  let name: unknown;
  try {
    name = (err as { name?: unknown } | null)?.name;
  } catch {
    return failed; // a getter that throws: the message already says what could be said
  }
  carryName(failed, name, false);
  return failed;
}

/** The caller's input could not be posted to a thread: what threw or refused it is the cause. */
function notPosted(err: unknown): InvalidArgumentError {
  return new InvalidArgumentError(
    `the task's input could not be posted to a worker: ${describeThrown(err)}`,
    { cause: err },
  );
}
