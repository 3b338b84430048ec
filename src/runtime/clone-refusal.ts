import { types } from 'node:util';

/**
 * How structured clone (and postMessage) refuses to post a value, in this thread: a task whose
 * input it refused is then answered as the caller's mistake, with one coded error, not as a
 * dead worker or with node's raw error (see task-failure.ts).
 */

/**
 * This thread's structured clone refused a value: a DOMException named DataCloneError (a
 * function, a detached buffer, a buffer listed twice), a TypeError coded
 * ERR_MISSING_TRANSFERABLE_IN_TRANSFER_LIST for what can only be transferred (a MessagePort, a
 * stream) but is not listed, or ERR_INVALID_TRANSFER_OBJECT for a transfer list holding what
 * cannot be transferred. Only this thread's own errors: a worker's uncaught error is that
 * worker's failure (its thread died in the call), though it may carry the same name or code. A
 * DOMException, not the name alone: a worker's DataCloneError reaches this thread rebuilt as a
 * plain Error of that name (workers/uncaught.ts). A native error for the codes: Node rebuilds a
 * worker's uncaught TypeError, code included, as an object with TypeError's prototype that is
 * not a native error. Any other error is no refusal, though the caller's own value may have
 * thrown it as the clone read it (a getter): task-failure.ts tells that from a dead thread by
 * whether a thread was lost, as no error type can tell it.
 */
export function isCloneRefusal(err: unknown): boolean {
  try {
    if (err instanceof DOMException) return err.name === 'DataCloneError';
    if (!types.isNativeError(err)) return false;
    const code = (err as { code?: unknown }).code;
    return code === 'ERR_MISSING_TRANSFERABLE_IN_TRANSFER_LIST' || code === 'ERR_INVALID_TRANSFER_OBJECT';
  } catch {
    // Node's own refusals read plainly; a value that throws as it is read (a getter, a Proxy's
    // trap) is the caller's, thrown by its input: no refusal, and the call must still reject.
    return false;
  }
}
