import { isArrayBuffer, isArrayBufferView } from 'node:util/types';
import { Piscina } from 'piscina';
import type { Claim } from './admission/index.js';

/**
 * What a worker receives for a task: the claim it must release, the caller's input and its
 * limits, packed in one array. Structured clone rebuilds an object key by key in the receiving
 * thread (each key looked up in its string table, each step a map transition); an array of
 * numbers costs a fraction of that, and this message is cloned once per call. An array also
 * tells a task from a ping, which is an object.
 */
export type TaskMessage<I = unknown> = readonly [
  input: I,
  admission: number,
  slot: number,
  generation: number,
  /** The claim's units: the cost the call was admitted with (a permit holds its cost in units). */
  units: number,
  /** Date.now() after which the caller no longer waits (0 = none). */
  deadlineAt: number,
];

/** The claim a task message carries, rebuilt in the worker (plain data, as the admission takes). */
export function messageClaim(message: TaskMessage): Claim {
  return { admission: message[1], slot: message[2], generation: message[3], units: message[4] };
}

/**
 * What run() hands piscina for a task: the message itself when nothing is transferred (no
 * envelope, no move()), else the envelope that lists the buffers to move.
 */
export function taskPost<I>(
  claim: Claim,
  input: I,
  deadlineAt: number,
  transfer: readonly ArrayBuffer[],
): TaskMessage<I> {
  const message: TaskMessage<I> = [
    input,
    claim.admission,
    claim.slot,
    claim.generation,
    claim.units,
    deadlineAt,
  ];
  if (transfer.length === 0) return message;
  const checked = runsNoCode(input)
    ? checkedAfterAll(message, transfer)
    : checkedAtPost(message, input, deadlineAt, transfer);
  return moveEnvelope(new TaskEnvelope(checked, transfer));
}

/**
 * An input whose clone runs no caller code: a primitive, or a buffer or view (read by internal
 * slot; a Proxy is neither, and its clone is refused).
 */
function runsNoCode(input: unknown): boolean {
  const type = typeof input;
  if (input === null || (type !== 'object' && type !== 'function')) return true;
  return isArrayBuffer(input) || isArrayBufferView(input);
}

/**
 * checkedAtPost's check where the input's clone runs no caller code: nothing can detach or shrink
 * a listed buffer while the message is read, so the one check, detached, comes once, after it. Made
 * by a named accessor, which clone reads after the array's elements, and which leaves the array
 * packed: accessor elements make clone take its sparse-array path, 3-4 µs more a post + receive in
 * a one-thread loop (bench/transfer-sweep.bench.ts), ~5 µs of a 1 MiB round trip (an A/B of the
 * two in one process, docs/benchmarks.md). The worker's copy of the message carries the name, undefined.
 * One getter for every message (no closure a call), which finds the list under a symbol: clone
 * skips symbol keys, so the list itself is not posted.
 */
function checkedAfterAll<I>(message: TaskMessage<I>, transfer: readonly ArrayBuffer[]): TaskMessage<I> {
  (message as Listed<I>)[kListed] = transfer;
  return Object.defineProperty(message, 'posted', POSTED);
}

const kListed = Symbol('omni.listed');

type Listed<I> = TaskMessage<I> & { [kListed]: readonly ArrayBuffer[] };

const POSTED: PropertyDescriptor = {
  enumerable: true,
  get(this: Listed<unknown>): undefined {
    if (this[kListed].some(isDetached)) {
      throw new DOMException('an ArrayBuffer listed for transfer is detached', 'DataCloneError');
    }
    return undefined;
  },
};

/**
 * The transferable a task with transfers travels in: the ArrayBuffers listed in `transfer`
 * move zero-copy and are detached on the sending side. piscina reads the two symbols when the
 * envelope is sent through `Piscina.move` (a move() nested in a plain object would be copied).
 */
class TaskEnvelope<I> {
  readonly #message: TaskMessage<I>;
  readonly #transfer: readonly ArrayBuffer[];

  constructor(message: TaskMessage<I>, transfer: readonly ArrayBuffer[]) {
    this.#message = message;
    this.#transfer = transfer;
  }

  get [Piscina.transferableSymbol](): readonly ArrayBuffer[] {
    return this.#transfer;
  }

  get [Piscina.valueSymbol](): TaskMessage<I> {
    return this.#message;
  }
}

/**
 * The message, for an input whose clone may run caller code (the others: checkedAfterAll), with
 * its first and last elements read through getters, which structured clone calls when piscina
 * posts the task: for a queued call that is after run() returned, so a listed
 * buffer may have been detached since (given to another call, or moved elsewhere). Node then
 * posts a view of it without complaint and the worker fails to read the message, which kills
 * its thread (skipping its close hook). Refused here instead, as the platform's structured clone
 * refuses a detached buffer in a transfer list: the post throws and the caller hears
 * OMNI_ERR_INVALID_ARGUMENT. Checked after the input, which clone reads between the two (an
 * array's elements in order): reading it runs the caller's getters, and one that detached a
 * listed buffer, or shrank a resizable one under a view clone had already written, killed the
 * thread all the same. The lengths are taken as the input's reading begins. Only those two
 * moments are seen: getters that grow a listed resizable buffer, have a view over the new bytes
 * written, then shrink it to no less than its first length still kill the thread (clone gives
 * no hook inside the input, and refusing every change of length would refuse a harmless growth).
 */
function checkedAtPost<I>(
  message: TaskMessage<I>,
  input: I,
  deadlineAt: number,
  transfer: readonly ArrayBuffer[],
): TaskMessage<I> {
  let before: number[] = [];
  Object.defineProperty(message, 0, {
    enumerable: true,
    get(): I {
      before = transfer.map((buffer) => bufferBytes.call(buffer));
      return input;
    },
  });
  return Object.defineProperty(message, 5, {
    enumerable: true,
    get(): number {
      if (transfer.some((buffer, i) => isDetached(buffer) || bufferBytes.call(buffer) < (before[i] ?? 0))) {
        throw new DOMException(
          'an ArrayBuffer listed for transfer is detached, or shrank as the input was read',
          'DataCloneError',
        );
      }
      return deadlineAt;
    },
  });
}

/**
 * By internal slot: a buffer's own `byteLength` is the caller's, and one that said a detached
 * buffer has bytes let Node post it, which killed the thread that read the message.
 */
const bufferBytes = Object.getOwnPropertyDescriptor(ArrayBuffer.prototype, 'byteLength')!.get as (
  this: ArrayBuffer,
) => number;

/** Node 20 has no ArrayBuffer.prototype.detached; only a detached buffer refuses a view. */
function isDetached(buffer: ArrayBuffer): boolean {
  if (bufferBytes.call(buffer) !== 0) return false;
  try {
    new Uint8Array(buffer);
    return false;
  } catch {
    return true;
  }
}

/** A worker's reply, sent back the same way so result buffers move zero-copy too. */
export class ResultEnvelope<T> {
  readonly #value: T;
  readonly #transfer: readonly ArrayBuffer[];

  constructor(value: T, transfer: readonly ArrayBuffer[]) {
    this.#value = value;
    this.#transfer = transfer;
  }

  get [Piscina.transferableSymbol](): readonly ArrayBuffer[] {
    return this.#transfer;
  }

  get [Piscina.valueSymbol](): T {
    return this.#value;
  }
}

type Movable = Parameters<typeof Piscina.move>[0];

/**
 * Marks an envelope for transfer. piscina's types only know its own symbol declarations, so
 * the envelope goes through one cast here rather than at every call site.
 */
export function moveEnvelope<T>(envelope: TaskEnvelope<unknown> | ResultEnvelope<T>): T {
  return Piscina.move(envelope as unknown as Movable) as unknown as T;
}
