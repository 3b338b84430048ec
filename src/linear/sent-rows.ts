/**
 * Whether LinearRuntime.run sends a copy of x's rows instead of x. Structured clone copies a
 * typed array's whole buffer, not only its view: a 2-row view into a 64 MiB batch would cost a
 * 64 MiB copy per call (measured ~97 ms against ~1 ms for the same rows alone). A view over part
 * of an unshared buffer that the caller does not move is therefore copied, its rows alone, and
 * that copy is moved when the caller gave no transfer list, so the rows are copied once, as a
 * compact array's are. A compact array, a view over shared memory (a clone shares it, no copy)
 * or a buffer the caller moves goes as it is.
 *
 * x is read through its internal slots only, as lengthOf reads its length: its own `buffer`,
 * `byteLength`, `slice` or `constructor` (which slice's species reads) may be shadowed by a
 * getter that throws, which would make run() throw instead of rejecting, or that lies, which
 * would decide what is sent. The transfer list is LinearRuntime.run's checked snapshot of the
 * caller's (see checkTransfer), never the caller's own array, so reading it throws nothing.
 */
import { types } from 'node:util';

const viewSlots = Object.getPrototypeOf(Int8Array.prototype) as object;
const bufferOf = slotGetter<ArrayBufferView, ArrayBufferLike>(viewSlots, 'buffer');
const viewBytesOf = slotGetter<ArrayBufferView, number>(viewSlots, 'byteLength');
const bufferBytesOf = slotGetter<ArrayBuffer, number>(ArrayBuffer.prototype, 'byteLength');

function slotGetter<T, R>(prototype: object, key: string): (this: T) => R {
  return Object.getOwnPropertyDescriptor(prototype, key)!.get as (this: T) => R;
}

export function sendsRowsCopy(x: Float32Array, transfer: readonly ArrayBuffer[] | undefined): boolean {
  const buffer = bufferOf.call(x);
  if (types.isSharedArrayBuffer(buffer)) return false;
  if (viewBytesOf.call(x) === bufferBytesOf.call(buffer as ArrayBuffer)) return false;
  return transfer === undefined || !transfer.includes(buffer as ArrayBuffer);
}

/** x's rows in a buffer of their own (what `x.slice()` gives, without reading x's properties). */
export function rowsCopy(x: Float32Array): Float32Array {
  return new Float32Array(x);
}
