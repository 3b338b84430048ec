/**
 * A handler's result, made into the reply piscina will post. piscina posts after this entry
 * has returned, and a value structured clone refuses (a function, a symbol, a buffer listed
 * twice for transfer) throws there, from a microtask: the thread then dies without its close
 * hook, or, where the worker handles uncaught exceptions itself, lives on with the call
 * 'running' for good. So the reply is cloned here first (transfer-listed buffers are moved, not
 * copied) and a refusal becomes the call's own error, the thread serving on. Primitives and
 * non-empty buffers, which always post, skip that; a buffer is checked again as it is posted
 * (see checkedAtPost), and a primitive's listed buffers are moved here (see movedAway).
 */

import { types } from 'node:util';
import { Piscina } from 'piscina';
import { moveEnvelope, ResultEnvelope } from '../src/envelope.js';
import { isMovable, movedValue, withMovedBuffers } from '../src/movable.js';
import type { TaskReply } from '../src/runtime/protocol.js';
import { toWire, type WireError } from '../src/wire-error.js';

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
  return (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) && bytesOf(value) > 0;
}

/** A buffer's or a view's length: 0 once the buffer is detached, or the view out of its bounds. */
function bytesOf(value: ArrayBuffer | ArrayBufferView): number {
  if (value instanceof ArrayBuffer) return bufferBytes.call(value);
  if (types.isTypedArray(value)) return typedArrayBytes.call(value);
  try {
    return dataViewBytes.call(value as DataView);
  } catch {
    // Where a typed array's length reads 0, a DataView's throws: thrown in the `ok` getter, it
    // threw piscina's post (the thread ended, or its call stayed 'running').
    return 0;
  }
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
    // A primitive always posts; the one object that skips the clone is a buffer or a view.
    if (typeof value === 'object' && value !== null) {
      return checkedAtPost(value as ArrayBuffer | ArrayBufferView, list);
    }
    return list.length === 0 ? { ok: true, value } : movedAway(value, list);
  }
  let cloned: { value: unknown; list: readonly ArrayBuffer[] };
  try {
    // One clone holds the value and the list, so the list names the clone's own buffers.
    cloned = structuredClone({ value, list }, { transfer: list as ArrayBuffer[] });
  } catch (err) {
    return refused(err);
  }
  // The clone's buffers are its own: no code the handler left running can reach them.
  const reply: TaskReply = { ok: true, value: cloned.value };
  return cloned.list.length === 0 ? reply : moveEnvelope(new ResultEnvelope(reply, cloned.list));
}

/**
 * A primitive's reply with buffers listed: nothing in it refers to them, so they are moved here,
 * into a clone nothing keeps, and the reply goes without a list, as the post would have moved them
 * (Node 20 leaves a buffer it cannot detach, a WebAssembly.Memory's, in place, copying nothing).
 * Listed with the reply, code the handler left running could detach one before the post, which
 * Node 21+ then refused in the thread (ending it, or leaving the call 'running' for good); and
 * Node 21+ refuses a memory's buffer there too. Here a refusal is the call's own error.
 */
function movedAway(value: unknown, list: readonly ArrayBuffer[]): TaskReply {
  try {
    structuredClone(undefined, { transfer: list as ArrayBuffer[] });
  } catch (err) {
    return refused(err);
  }
  return { ok: true, value };
}

/**
 * Every refusal (DataCloneError, Node's ERR_INVALID_TRANSFER_OBJECT...) is the task's own
 * failure: OMNI_ERR_TASK_FAILED, keeping the name and message that say what went wrong.
 */
function refused(err: unknown): { ok: false; error: WireError } {
  const { code: _refusal, ...error } = toWire(err);
  return { ok: false, error };
}

/** Symbol-keyed: structured clone posts an object's string keys only. */
const BYTES = Symbol('length at the check, -1 once the value is a clone');
const LIST = Symbol('transfer list');

interface CheckedReply {
  readonly ok: boolean;
  value: unknown;
  error: WireError | undefined;
  [BYTES]: number;
  [LIST]: readonly ArrayBuffer[];
}

/**
 * The reply of a buffer or view the handler returned as is, checked again as piscina posts it.
 * Code the handler left running (a microtask, a timer) may detach the buffer, or shrink a
 * resizable one under the view, between this entry's return and the post: unlisted, the post
 * threw in the thread (ending it, or, where the worker handles uncaught errors itself, leaving
 * the call 'running' for good); listed, it went through and the main thread could not read it,
 * 'running' again. Structured clone reads `ok` first, with nothing running between that read and
 * the buffer's. A length changed since the check gets the check then, the clone this entry
 * skipped, and the answer a change before the check would have had: a refusal turns the reply
 * into the call's error before `value` and `error` are read; a clone that takes it stands in for
 * the value (the listed buffers moved into it, the post copies it). One getter shared by all
 * replies: the common case costs a property definition and a length read, ~0.5 us a reply here
 * (an object literal's getter, a closure each, cost twice that).
 */
const checkedOk: PropertyDescriptor & ThisType<CheckedReply> = {
  enumerable: true,
  get(): boolean {
    recheck(this);
    return this.error === undefined;
  },
};

/**
 * Does the check again where a length changed (the value's, or a listed buffer's gone to 0:
 * detached, the entry lists only buffers with bytes here), or where `always`. After a clone, the
 * value and the list are the clone's own, out of the handler's reach: nothing to look at again.
 */
function recheck(reply: CheckedReply, always = false): void {
  if (reply.error !== undefined || reply[BYTES] < 0) return;
  const value = reply.value as ArrayBuffer | ArrayBufferView;
  const list = reply[LIST];
  const unchanged = bytesOf(value) === reply[BYTES] && !anyDetached(list);
  if (unchanged && !always) return;
  try {
    const cloned = structuredClone({ value, list }, { transfer: list as ArrayBuffer[] });
    reply.value = cloned.value;
    reply[LIST] = cloned.list;
    reply[BYTES] = -1;
  } catch (err) {
    reply.value = undefined;
    reply.error = refused(err).error;
    reply[LIST] = [];
  }
}

/**
 * The envelope of a checked reply whose buffers are listed. piscina reads its transfer list just
 * before the post, and Node 21+ refuses, before reading the reply (so before `ok`), a post that
 * lists a detached buffer, throwing in the thread as above: the list is checked as it is read,
 * and is the clone's (or none) where the check found a change. Between that read and the post
 * piscina awaits stdout and stderr where a handler's output is still pending, and code the
 * handler left running runs then: the buffers are moved into the clone's own right away there
 * (a clone, ~15 us, next to that wait's round trip to the main thread).
 */
class CheckedEnvelope extends ResultEnvelope<TaskReply> {
  readonly #reply: CheckedReply;

  constructor(reply: CheckedReply) {
    super(reply as unknown as TaskReply, reply[LIST]);
    this.#reply = reply;
  }

  get [Piscina.transferableSymbol](): readonly ArrayBuffer[] {
    recheck(this.#reply, process.stdout.writableLength > 0 || process.stderr.writableLength > 0);
    return this.#reply[LIST];
  }
}

/** A loop, not list.some: no closure for each reply (the list has a buffer or two). */
function anyDetached(list: readonly ArrayBuffer[]): boolean {
  for (const buffer of list) if (bufferBytes.call(buffer) === 0) return true;
  return false;
}

function checkedAtPost(value: ArrayBuffer | ArrayBufferView, list: readonly ArrayBuffer[]): TaskReply {
  // `ok` made first: clone reads an object's keys in the order they were made.
  const reply = Object.defineProperty({}, 'ok', checkedOk) as CheckedReply;
  reply.value = value;
  reply.error = undefined;
  reply[BYTES] = bytesOf(value);
  reply[LIST] = list;
  return list.length === 0 ? (reply as unknown as TaskReply) : moveEnvelope(new CheckedEnvelope(reply));
}
