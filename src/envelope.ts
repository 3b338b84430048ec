import { Piscina } from 'piscina';
import type { Claim } from './admission/index.js';

/** What a worker receives: the claim it must release, the caller's input and its limits. */
export interface TaskMessage<I = unknown> {
  readonly kind: 'task';
  readonly claim: Claim;
  readonly input: I;
  readonly cost: number;
  /** Date.now() after which the caller no longer waits (0 = none). */
  readonly deadlineAt: number;
}

/**
 * The transferable a task travels in. It carries the permit's claim (plain data, so the
 * worker can release it) and the payload; the ArrayBuffers listed in `transfer` move
 * zero-copy and are detached on the sending side. piscina reads the two symbols when the
 * envelope is sent through `Piscina.move` (a move() nested in a plain object would be copied).
 */
export class TaskEnvelope<I = unknown> {
  readonly #message: TaskMessage<I>;
  readonly #transfer: readonly ArrayBuffer[];

  constructor(claim: Claim, input: I, cost: number, deadlineAt: number, transfer: readonly ArrayBuffer[]) {
    this.#message =
      transfer.length === 0
        ? { kind: 'task', claim, input, cost, deadlineAt }
        : checkedAtPost({ kind: 'task', claim, cost, deadlineAt }, input, transfer);
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
 * The message with `input` read through a getter, which structured clone calls when piscina
 * posts the task: for a queued call that is after run() returned, so a listed buffer may have
 * been detached since (given to another call, or moved elsewhere). Node then posts a view of it
 * without complaint and the worker fails to read the message, which kills its thread (skipping
 * its close hook). Refused here instead, as the platform's structured clone refuses a detached
 * buffer in a transfer list: the post throws and the caller hears OMNI_ERR_INVALID_ARGUMENT.
 */
function checkedAtPost<I>(
  fields: Omit<TaskMessage<I>, 'input'>,
  input: I,
  transfer: readonly ArrayBuffer[],
): TaskMessage<I> {
  return Object.defineProperty(fields, 'input', {
    enumerable: true,
    get(): I {
      if (transfer.some(isDetached)) {
        throw new DOMException('an ArrayBuffer listed for transfer is detached', 'DataCloneError');
      }
      return input;
    },
  }) as TaskMessage<I>;
}

/** Node 20 has no ArrayBuffer.prototype.detached; only a detached buffer refuses a view. */
function isDetached(buffer: ArrayBuffer): boolean {
  if (buffer.byteLength !== 0) return false;
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
export function moveEnvelope<T>(envelope: TaskEnvelope | ResultEnvelope<T>): T {
  return Piscina.move(envelope as unknown as Movable) as unknown as T;
}
