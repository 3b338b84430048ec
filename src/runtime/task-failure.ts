/**
 * What a caller hears when piscina rejects a dispatched task (no reply from the worker entry),
 * by what the rejection was and by who gave the capacity back.
 */
import { describeValue, InvalidArgumentError, TaskFailedError, WorkerExitedError } from '../errors.js';
import { isCloneRefusal } from './clone-refusal.js';

/**
 * A readable message for any rejection value. A worker's uncaught error crosses threads
 * through Node's error serializer, which keeps name and message for native Errors only; the
 * worker entry rethrows other values as native Errors (workers/uncaught.ts), and whatever
 * still arrives as a plain value is described rather than printed as "[object Object]".
 */
export function messageOf(err: unknown): string {
  if (err instanceof Error) return err.message;
  const message = (err as { message?: unknown } | null)?.message;
  if (typeof message === 'string') return message;
  return `the worker failed with a value that is not an Error: ${describeValue(err)}`;
}

/** `reclaimed`: this thread, not the worker, gave the task's capacity back. */
export function taskFailure(err: unknown, reclaimed: boolean): Error {
  const message = messageOf(err);
  if (!reclaimed) return new TaskFailedError(message);
  // The input (or its transfer list) could not be posted: structured clone refused it in this
  // thread (piscina hands back postMessage's own error), so no worker ever saw the task.
  if (isCloneRefusal(err))
    return new InvalidArgumentError(`the task could not be sent to a worker: ${message}`);
  return new WorkerExitedError(message);
}
