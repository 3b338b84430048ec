/**
 * An uncaught error ends a worker thread, and Node serializes it for the main thread keeping
 * name and message only for native Errors: anything else arrives as a bare object. The one
 * that matters here is piscina's own: a result that cannot be posted back (a function in it,
 * a buffer listed twice for transfer) throws a DOMException named DataCloneError from a
 * microtask, and its caller would hear "[object Object]" on Node 20. Node 22+ counts a
 * DOMException as a native Error but serializes only its own properties, and its name and
 * message are getters on its prototype: it arrives as an Error with an empty message. Rethrown
 * as a plain Error with the same name and message, it still ends the thread, and the caller
 * hears what went wrong.
 *
 * Installed before the user's module loads; a handler the user adds takes over (while one
 * exists, this one leaves the error to it, as Node would).
 */
import { types } from 'node:util';

function asNativeError(err: unknown): unknown {
  if (types.isNativeError(err) && !(err instanceof DOMException)) return err;
  const named = err as { name?: unknown; message?: unknown; code?: unknown } | null;
  if (typeof named?.message !== 'string') return err;
  const native = new Error(named.message);
  if (typeof named.name === 'string') native.name = named.name;
  if (typeof named.code === 'string') Object.assign(native, { code: named.code });
  return native;
}

function rethrow(err: unknown): void {
  // Throwing from this handler is what ends the thread (with the rebuilt error).
  if (process.listenerCount('uncaughtException') === 1) throw asNativeError(err);
}

export function reportUncaughtErrors(): void {
  process.on('uncaughtException', rethrow);
}
