import type { Claim } from '../src/admission/index.js';
import type { TaskContext } from '../src/define-worker.js';
import { cancelledWord, isCancelled } from '../src/runtime/cancel-words.js';

/** The `ctx` a handler receives; cancellation is read from the shared cancel word. */
export class WorkerTaskContext implements TaskContext {
  readonly cost: number;
  readonly deadlineAt: number;
  readonly transferList: ArrayBuffer[] = [];
  readonly #words: Int32Array;
  readonly #claim: Claim;
  #controller: AbortController | undefined;
  #done = false;

  constructor(words: Int32Array, claim: Claim, cost: number, deadlineAt: number) {
    this.#words = words;
    this.#claim = claim;
    this.cost = cost;
    this.deadlineAt = deadlineAt;
  }

  get cancelled(): boolean {
    return isCancelled(this.#words, this.#claim);
  }

  get signal(): AbortSignal {
    if (this.#controller) return this.#controller.signal;
    const controller = new AbortController();
    this.#controller = controller;
    this.#watch(controller);
    return controller.signal;
  }

  /**
   * Aborts `controller` once the main thread cancels this task. Woken by its notify on cancel,
   * or by finish() below so no waiter outlives the task. Any other wake (the word changed to
   * something that is not this task's cancel) waits again: returning then would leave a
   * later, real cancel unseen.
   */
  #watch(controller: AbortController): void {
    const seen = Atomics.load(this.#words, this.#claim.slot);
    if (seen === cancelledWord(this.#claim)) {
      controller.abort();
      return;
    }
    const wait = Atomics.waitAsync(this.#words, this.#claim.slot, seen);
    const onWake = (): void => {
      if (!this.#done) this.#watch(controller);
    };
    if (wait.async) void wait.value.then(onWake);
    else onWake();
  }

  transfer(...buffers: ArrayBuffer[]): void {
    for (const buffer of buffers) {
      if (!(buffer instanceof ArrayBuffer)) throw new TypeError('ctx.transfer takes ArrayBuffers');
      this.transferList.push(buffer);
    }
  }

  /** Ends the task: a pending signal wait is released so it cannot outlive it. */
  finish(): void {
    this.#done = true;
    if (this.#controller) Atomics.notify(this.#words, this.#claim.slot);
  }
}
