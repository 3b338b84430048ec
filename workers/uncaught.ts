/**
 * An uncaught error ends a worker thread, and Node serializes it for the main thread keeping
 * name and message only for native Errors: anything else arrives as a bare object. The one
 * that matters here is piscina's own: a result that cannot be posted back (a function in it,
 * a buffer listed twice for transfer) throws a DOMException named DataCloneError from a
 * microtask, and its caller would hear "[object Object]". Rethrown as a native Error with the
 * same name and message, it still ends the thread, and the caller hears what went wrong.
 *
 * Installed before the user's module loads; a handler the user adds takes over (while one
 * exists, this one leaves the error to it, as Node would), save for a reply that was refused.
 */
import { types } from 'node:util';

function asNativeError(err: unknown): unknown {
  if (types.isNativeError(err)) return err;
  const named = err as { name?: unknown; message?: unknown; code?: unknown } | null;
  if (typeof named?.message !== 'string') return err;
  const native = new Error(named.message);
  if (typeof named.name === 'string') native.name = named.name;
  if (typeof named.code === 'string') Object.assign(native, { code: named.code });
  return native;
}

/**
 * A task's reply is out of the entry's hands and not yet known to be posted: piscina posts it a
 * few microtasks after the entry returns, and code the handler left running may detach a buffer
 * the reply holds in between. Set by the entry at a task's end, cleared as the next one starts.
 */
let replyPending = false;

export function setReplyPending(pending: boolean): void {
  replyPending = pending;
}

/** The error piscina's post of a reply throws (from a nextTick) when clone refuses it. */
function isRefusedReply(err: unknown): boolean {
  if (!replyPending) return false;
  try {
    return (err as { name?: unknown } | null)?.name === 'DataCloneError';
  } catch {
    return false;
  }
}

function rethrow(err: unknown): void {
  // Throwing from this handler is what ends the thread (with the rebuilt error). A refused reply
  // ends it even where the worker handles uncaught errors itself: the thread lived on with its
  // call 'running' for good, the caller's promise never settling and the thread serving no more.
  if (process.listenerCount('uncaughtException') === 1 || isRefusedReply(err)) throw asNativeError(err);
}

export function reportUncaughtErrors(): void {
  process.on('uncaughtException', rethrow);
}
