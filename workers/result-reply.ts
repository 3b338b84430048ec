/**
 * A handler's result, made into the reply piscina will post. piscina posts after this entry
 * has returned, and a value structured clone refuses (a function, a symbol, a buffer listed
 * twice for transfer) throws there, from a microtask: the thread then dies without its close
 * hook, or, where the worker handles uncaught exceptions itself, lives on with the call
 * 'running' for good. So the reply is cloned here first (transfer-listed buffers are moved, not
 * copied) and a refusal becomes the call's own error, the thread serving on. Primitives and
 * non-empty buffers, which always post, skip that.
 */

import { types } from 'node:util';
import { moveEnvelope, ResultEnvelope } from '../src/envelope.js';
import { isMovable, movedValue, withMovedBuffers } from '../src/movable.js';
import type { TaskReply } from '../src/runtime/protocol.js';
import { toWire } from '../src/wire-error.js';

/**
 * Lengths read by internal slot: a value's own `byteLength` is the handler's to shadow, and one
 * that said a detached buffer has bytes sent it to piscina's post, which threw there.
 */
const bufferBytes = slotGetter<ArrayBuffer>(ArrayBuffer.prototype);
const typedArrayBytes = slotGetter<ArrayBufferView>(Object.getPrototypeOf(Int8Array.prototype) as object);
const dataViewBytes = slotGetter<DataView>(DataView.prototype);

function slotGetter<T>(prototype: object): (this: T) => number {
  return Object.getOwnPropertyDescriptor(prototype, 'byteLength')!.get as (this: T) => number;
}

/**
 * Results that always post, so the common ones skip the check: a primitive, or a buffer or view
 * with bytes (a detached buffer has none, and clone refuses it), with a transfer list of such
 * ArrayBuffers only (a move() of a view over shared memory would list a SharedArrayBuffer).
 */
function alwaysPostable(value: unknown, list: readonly ArrayBuffer[]): boolean {
  for (const buffer of list)
    if (!(buffer instanceof ArrayBuffer) || bufferBytes.call(buffer) === 0) return false;
  const type = typeof value;
  if (value === null || (type !== 'object' && type !== 'function' && type !== 'symbol')) return true;
  if (value instanceof ArrayBuffer) return bufferBytes.call(value) > 0;
  if (!ArrayBuffer.isView(value)) return false;
  return (types.isTypedArray(value) ? typedArrayBytes : dataViewBytes).call(value as DataView) > 0;
}

export function resultReply(result: unknown, transfer: readonly ArrayBuffer[]): TaskReply {
  // ctx.transfer keeps its list free of duplicates, and so does the merge with a movable's own.
  // One isMovable: a Proxy's `has` trap may answer differently per call (its value unwrapped,
  // its buffers then cloned, not moved).
  let value = result;
  let list = transfer;
  if (isMovable(result)) {
    value = movedValue(result);
    list = withMovedBuffers(result, transfer);
  }
  if (alwaysPostable(value, list)) {
    const reply: TaskReply = { ok: true, value };
    return list.length === 0 ? reply : moveEnvelope(new ResultEnvelope(reply, list));
  }
  let cloned: { value: unknown; list: readonly ArrayBuffer[] };
  try {
    // One clone holds the value and the list, so the list names the clone's own buffers.
    cloned = structuredClone({ value, list }, { transfer: list as ArrayBuffer[] });
  } catch (err) {
    // Every refusal (DataCloneError, Node's ERR_INVALID_TRANSFER_OBJECT...) is the task's own
    // failure: OMNI_ERR_TASK_FAILED, keeping the name and message that say what went wrong.
    const { code: _refusal, ...error } = toWire(err);
    return { ok: false, error };
  }
  const reply: TaskReply = { ok: true, value: cloned.value };
  return cloned.list.length === 0 ? reply : moveEnvelope(new ResultEnvelope(reply, cloned.list));
}
