/**
 * Whether LinearRuntime.run sends a copy of x's rows instead of x. Structured clone copies a
 * typed array's whole buffer, not only its view: a 2-row view into a 64 MiB batch would cost a
 * 64 MiB copy per call (measured ~97 ms against ~1 ms for the same rows alone). A view over part
 * of an unshared buffer that the caller does not move is therefore copied, its rows alone, and
 * that copy is moved when the caller gave no transfer list, so the rows are copied once, as a
 * compact array's are. A compact array, a view over shared memory (a clone shares it, no copy)
 * or a buffer the caller moves goes as it is.
 */
import { types } from 'node:util';
import type { RunOptions } from '../runtime/options.js';

export function sendsRowsCopy(x: Float32Array, transfer: RunOptions['transfer']): boolean {
  const buffer = x.buffer;
  if (x.byteLength === buffer.byteLength || types.isSharedArrayBuffer(buffer)) return false;
  // Not an array: a mistake that Runtime.run refuses, so no copy is made for it.
  return transfer === undefined || (Array.isArray(transfer) && !transfer.includes(buffer));
}
