import { isArrayBuffer } from 'node:util/types';
import type { Claim } from '../src/admission/index.js';
import type { TaskContext } from '../src/define-worker.js';
import { InvalidArgumentError } from '../src/errors.js';
import { clearLongTimeout, type LongTimer, setLongTimeout } from '../src/long-timeout.js';
import { cancelledWord, isCancelled } from '../src/runtime/cancel-words.js';
import type { SkipReason } from '../src/runtime/protocol.js';

/** Up to this many buffers the list itself is searched for duplicates (cheaper than a set). */
const SEARCHED_LIST = 16;

/** Set once, by the class below: the one way to a context's list from outside it. */
let listOf: (ctx: WorkerTaskContext) => readonly ArrayBuffer[];

/**
 * The buffers a task's reply moves, as ctx.transfer listed them: for the entry, not the handler
 * (which holds the context, not this module).
 */
export function transferListOf(ctx: WorkerTaskContext): readonly ArrayBuffer[] {
  return listOf(ctx);
}

/** The `ctx` a handler receives; cancellation is read from the shared cancel word. */
export class WorkerTaskContext implements TaskContext {
  readonly cost: number;
  readonly deadlineAt: number;
  /**
   * Private, not a property: a handler pushing into the list skipped ctx.transfer's checks, and a
   * buffer pushed twice reached piscina's post, which threw there and ended the thread.
   */
  readonly #transferList: ArrayBuffer[] = [];
  /**
   * The buffers in the list once it is long, for the duplicate check: a search of the list
   * made a result of k buffers, each listed on its own, cost O(k^2) (40,000 of them took ~2 s a
   * call). Made only then: a task that lists a buffer or two (most) allocates no set.
   */
  #listed: Set<ArrayBuffer> | undefined;
  readonly #words: Int32Array;
  readonly #claim: Claim;
  #controller: AbortController | undefined;
  /** Why the signal aborted: its deadline timer may fire a moment before Date.now() agrees. */
  #abortedFor: SkipReason | undefined;
  #deadlineTimer: LongTimer;
  /** The watch on the cancel word, armed on this thread's next turn (see `signal`). */
  #arming: ReturnType<typeof setImmediate> | undefined;
  /** A wait on the cancel word is pending: finish() must wake it. */
  #waiting = false;
  #done = false;

  static {
    listOf = (ctx) => ctx.#transferList;
  }

  constructor(words: Int32Array, claim: Claim, cost: number, deadlineAt: number) {
    this.#words = words;
    this.#claim = claim;
    this.cost = cost;
    this.deadlineAt = deadlineAt;
  }

  /**
   * The main thread's cancel word, or this thread's own clock past the deadline: a main thread
   * too busy to run its deadline timer must not keep expired work going.
   */
  get cancelled(): boolean {
    return isCancelled(this.#words, this.#claim) || this.#pastDeadline();
  }

  get signal(): AbortSignal {
    if (this.#controller) return this.#controller.signal;
    const controller = new AbortController();
    this.#controller = controller;
    if (this.#pastDeadline()) this.#abort(controller, 'deadline');
    else if (isCancelled(this.#words, this.#claim)) this.#abort(controller, 'aborted');
    else if (!this.#done) {
      // Only while the task runs: nothing may be left armed by a read after finish(). The wait is
      // armed once this thread's event loop turns, not here: its wake-up (finish's notify
      // included) is delivered only on a turn, and piscina runs one task after another without
      // one while each ends in microtasks (a synchronous or native handler), so every such task
      // that read ctx.signal left a resolved wait, and with it this context, behind for good.
      // A task that never turns the loop cannot hear the event anyway; finish() clears this.
      this.#arming = setImmediate((c) => {
        if (!this.#done) this.#watch(c);
      }, controller);
      if (this.deadlineAt !== 0) {
        // Deadlines may lie beyond one setTimeout (2^31-1 ms), which Node would cut to 1 ms.
        const left = this.deadlineAt - Date.now();
        this.#deadlineTimer = setLongTimeout((c) => this.#abort(c, 'deadline'), left, controller);
      }
    }
    return controller.signal;
  }

  #abort(controller: AbortController, reason: SkipReason): void {
    if (controller.signal.aborted) return;
    this.#abortedFor = reason;
    controller.abort();
  }

  /**
   * Why the task was stopped, when `err` is the handler giving up on it: an AbortError thrown
   * once its signal aborted, or once it was cancelled (ctx.cancelled). Such a task ends as its
   * caller sees it end (deadline, or abort), not as a failure. Undefined for anything else.
   */
  stoppedBy(err: unknown): SkipReason | undefined {
    let name: unknown;
    try {
      name = (err as { name?: unknown } | null)?.name;
    } catch {
      return undefined; // a getter that throws: not an AbortError, and toWire leaves it out
    }
    if (name !== 'AbortError') return undefined;
    if (this.#abortedFor !== undefined) return this.#abortedFor;
    if (isCancelled(this.#words, this.#claim)) return 'aborted';
    return this.#pastDeadline() ? 'deadline' : undefined;
  }

  #pastDeadline(): boolean {
    return this.deadlineAt !== 0 && Date.now() >= this.deadlineAt;
  }

  /**
   * Aborts `controller` once the main thread cancels this task. Woken by its notify on cancel,
   * or by finish() below so no waiter outlives the task. Any other wake (the word changed to
   * something that is not this task's cancel) waits again: returning then would leave a
   * later, real cancel unseen.
   */
  #watch(controller: AbortController): void {
    this.#arming = undefined;
    this.#waiting = false;
    const seen = Atomics.load(this.#words, this.#claim.slot);
    if (seen === cancelledWord(this.#claim)) {
      this.#abort(controller, 'aborted');
      return;
    }
    // Armed with the word just read: a cancel stored since then makes the wait return at once.
    const wait = Atomics.waitAsync(this.#words, this.#claim.slot, seen);
    const onWake = (): void => {
      this.#waiting = false;
      if (!this.#done) this.#watch(controller);
    };
    if (wait.async) {
      this.#waiting = true;
      void wait.value.then(onWake);
    } else onWake();
  }

  /** Listing a buffer twice is harmless (a transfer list with duplicates cannot be posted). */
  transfer(...buffers: ArrayBuffer[]): void {
    for (const buffer of buffers) {
      // What it is, not its prototype chain: a vm context's buffer moves like any other, and an
      // object that only inherits ArrayBuffer.prototype would fail the reply's post instead.
      if (!isArrayBuffer(buffer)) {
        throw new InvalidArgumentError('ctx.transfer takes ArrayBuffers (not views, not SharedArrayBuffers)');
      }
      const list = this.#transferList;
      if (list.length < SEARCHED_LIST) {
        if (!list.includes(buffer)) list.push(buffer);
        continue;
      }
      this.#listed ??= new Set(list);
      if (this.#listed.has(buffer)) continue;
      this.#listed.add(buffer);
      list.push(buffer);
    }
  }

  /**
   * Ends the task: a pending signal wait and deadline timer are released so they cannot outlive it.
   * The notify's wake-up, like any, is delivered on this thread's next loop turn, and an idle
   * piscina thread blocks in Atomics.wait ('sync' atomics) until its next task: a context whose
   * wait was armed stays held until a later task turns the loop. One per thread at most, since
   * arming a wait takes a turn, which delivers every wake-up pending.
   */
  finish(): void {
    this.#done = true;
    clearLongTimeout(this.#deadlineTimer);
    clearImmediate(this.#arming);
    if (this.#waiting) Atomics.notify(this.#words, this.#claim.slot);
  }
}
