/** Turning a native status into an error: the one place nonzero codes become NativeError. */
import { NativeError } from '../errors.js';
import { NativeStatus } from './abi.js';
import type { RawHandle } from './bindings.js';
import type { NativeLibrary } from './library.js';

/**
 * Throws NativeError(status, omni_last_error(ctx), fatal) unless status is OK. `ctx` is null for
 * calls without a context; the C side then reports the calling thread's message.
 */
export function check(lib: NativeLibrary, status: number, ctx: RawHandle | null, fn: string): void {
  if (status === NativeStatus.OK) return;
  const message = lib.raw.omni_last_error(ctx) || `${fn} failed with native status ${status}`;
  throw new NativeError(status, message, status === NativeStatus.FATAL);
}
