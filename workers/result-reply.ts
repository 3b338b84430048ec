/**
 * A handler's result, made into the reply piscina will post. piscina posts after this entry
 * has returned, and a value structured clone refuses (a function, a symbol, a buffer listed
 * twice for transfer) throws there, from a microtask: the thread then dies without its close
 * hook, or, where the worker handles uncaught exceptions itself, lives on with the call
 * 'running' for good. So the reply is cloned here first (transfer-listed buffers are moved, not
 * copied) and a refusal becomes the call's own error, the thread serving on. Primitives and
 * buffers, which always clone, skip that.
 */

import { moveEnvelope, ResultEnvelope } from '../src/envelope.js';
import { isMovable, movedValue, withMovedBuffers } from '../src/movable.js';
import type { TaskReply } from '../src/runtime/protocol.js';
import { toWire } from '../src/wire-error.js';

/**
 * Values structured clone always takes, with or without a (duplicate-free) transfer list:
 * primitives and buffers, the common results, skip the check.
 */
function alwaysPostable(value: unknown): boolean {
  const type = typeof value;
  if (value === null || (type !== 'object' && type !== 'function' && type !== 'symbol')) return true;
  return value instanceof ArrayBuffer || ArrayBuffer.isView(value);
}

export function resultReply(result: unknown, transfer: readonly ArrayBuffer[]): TaskReply {
  // ctx.transfer keeps its list free of duplicates, and so does the merge with a movable's own.
  const value = isMovable(result) ? movedValue(result) : result;
  const list = isMovable(result) ? withMovedBuffers(result, transfer) : transfer;
  if (alwaysPostable(value)) {
    const reply: TaskReply = { ok: true, value };
    return list.length === 0 ? reply : moveEnvelope(new ResultEnvelope(reply, list));
  }
  let cloned: { value: unknown; list: readonly ArrayBuffer[] };
  try {
    // One clone holds the value and the list, so the list names the clone's own buffers.
    cloned = structuredClone({ value, list }, { transfer: list as ArrayBuffer[] });
  } catch (err) {
    return { ok: false, error: toWire(err) };
  }
  const reply: TaskReply = { ok: true, value: cloned.value };
  return cloned.list.length === 0 ? reply : moveEnvelope(new ResultEnvelope(reply, cloned.list));
}
