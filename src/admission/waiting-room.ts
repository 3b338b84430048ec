/**
 * The waiting side of an admission instance: its FIFO of `admit` callers and its `close`
 * drains, woken by releases on any thread through the shared SEQ word.
 *
 * Invariants: only the queue head tries to reserve, so a large head is never starved by
 * smaller requests behind it; a waiter that gives up (abort, timeout) leaves at once and takes
 * nothing, then or later. Waiting never spins: between tries it sleeps on one Atomics.waitAsync
 * per instance, armed with the SEQ value read before the failed try (see BoundedAdmission,
 * "Memory ordering").
 * Memory ordering: a waiter counts itself in WAITERS, then sets WAITING, both before the head's
 * try; each try and each drain's depth read comes after a read of SEQ, so a release after it
 * moves SEQ and the wait on that value returns at once.
 * Abort safety: an abort or timeout takes the waiter out of the queue, WAITERS, its timer and its
 * signal before it rejects; a head whose signal aborted before its own listener ran is rejected,
 * never admitted; an admitted waiter no longer listens, so a later abort takes nothing from it.
 * Throws: nothing; wait() rejects OMNI_ERR_TIMEOUT (counted as a refusal), OMNI_ERR_CLOSED
 * (counted), AbortError (not counted) or what following a signal that takes no listener threw;
 * drain() never rejects.
 */
import {
  type AbortFollower,
  followAbort,
  signalAborted,
  signalReason,
  unfollowAbort,
} from '../abort-signal.js';
import { AbortError, ClosedError, TimeoutError } from '../errors.js';
import { clearLongTimeout, type LongTimer, setLongTimeout } from '../long-timeout.js';
import { SEQ_I32, WAITERS_I32 } from './layout.js';
import type { Permit } from './permit.js';
import { REFUSED_CLOSED, type Refusal } from './refusal.js';
import { type QueueNode, WaitQueue } from './wait-queue.js';

/** What the room needs from its admission. */
export interface WaitingHost {
  /** Check and reserve for the queue head, past the WAITING flag. */
  reserveAsHead(cost: number): Permit | Refusal;
  countRefusal(): void;
  setWaitingFlag(): void;
  /** Called when this thread took WAITERS to zero. */
  clearWaitingFlag(): void;
  depth(): number;
}

class Waiter implements QueueNode, AbortFollower {
  prev: QueueNode | undefined;
  next: QueueNode | undefined;
  queued = false;
  timer: LongTimer;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  handleEvent(): void {
    this.onAbort?.();
  }
  constructor(
    readonly cost: number,
    readonly resolve: (permit: Permit) => void,
    readonly reject: (err: Error) => void,
  ) {}
}

const holdRoom = (_room: WaitingRoom): void => {};

/**
 * A room's one Atomics.waitAsync outlives the room when the room is dropped (no close()) after
 * its waiters gave up: V8 keeps a pending wait, with its promise and continuation (~240 B), in
 * its wait list until a notify on the word, so each such admission added one for good. Once
 * the room is collected its word is woken as a release wakes it (other instances on the buffer
 * take that as any spurious wake). Held: the word alone, never the room.
 */
const orphanedWaits = new FinalizationRegistry<Int32Array>((i32) => {
  Atomics.add(i32, SEQ_I32, 1);
  Atomics.notify(i32, SEQ_I32);
});

export function abortError(signal: AbortSignal): AbortError {
  return new AbortError('admission wait was aborted', { cause: signalReason(signal) });
}

export class WaitingRoom {
  readonly #i32: Int32Array;
  readonly #host: WaitingHost;
  readonly #queue = new WaitQueue<Waiter>();
  readonly #drains: Array<() => void> = [];
  #watching = false;
  /** Registered with orphanedWaits, at the first wait on the word (most rooms never wait). */
  #registered = false;
  #keepAlive: ReturnType<typeof setInterval> | undefined;
  /** The continuation of every wait on SEQ, made once (see #wakeUp). */
  readonly #woken: () => void;

  constructor(i32: Int32Array, host: WaitingHost) {
    this.#i32 = i32;
    this.#host = host;
    this.#woken = WaitingRoom.#wakeUp(new WeakRef(this));
  }

  get waiting(): boolean {
    return this.#queue.size !== 0;
  }

  /** Anyone here to wake: waiters or drains. */
  get interested(): boolean {
    return this.#queue.size !== 0 || this.#drains.length !== 0;
  }

  /** Queues a caller FIFO; timeouts count as refusals, aborts do not. */
  wait(cost: number, signal: AbortSignal | undefined, timeoutMs: number | undefined): Promise<Permit> {
    return new Promise<Permit>((resolve, reject) => {
      const waiter = new Waiter(cost, resolve, reject);
      // Followed before anything is queued or counted: a signal that takes no listener throws
      // (see followAbort), which rejects this promise, and left queued the waiter would hold
      // the WAITING flag and then a permit nobody has.
      if (signal) {
        waiter.signal = signal;
        waiter.onAbort = () => this.#giveUp(waiter, abortError(signal), false);
        followAbort(signal, waiter);
      }
      this.#queue.push(waiter);
      // Count, then flag, both before the head's try: see BoundedAdmission, "Memory ordering".
      Atomics.add(this.#i32, WAITERS_I32, 1);
      this.#host.setWaitingFlag();
      this.#hold();
      if (timeoutMs !== undefined) {
        const timedOut = (w: Waiter): void =>
          this.#giveUp(
            w,
            new TimeoutError(`admit() found no room within its timeoutMs (${timeoutMs} ms); nothing is held`),
            true,
          );
        waiter.timer = setLongTimeout(timedOut, timeoutMs, waiter);
      }
      this.onChange();
    });
  }

  /** Resolves once the admission's depth reaches zero. */
  drain(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#drains.push(resolve);
      this.#hold();
      this.onChange();
    });
  }

  /** Admits queue heads that fit, settles drains, and re-arms the cross-thread watch. */
  onChange(): void {
    for (let head = this.#queue.head; head; head = this.#queue.head) {
      // Aborted, but its own listener has not run yet (an earlier listener on the same signal
      // released capacity and woke us): it must not be admitted after its caller gave up.
      if (head.signal && signalAborted(head.signal)) {
        this.#leave(head);
        head.reject(abortError(head.signal));
        continue;
      }
      // SEQ before the try: a release after a failed try then moves SEQ past `seq` (no lost wake).
      const seq = Atomics.load(this.#i32, SEQ_I32);
      const result = this.#host.reserveAsHead(head.cost);
      if (result.ok) {
        this.#leave(head);
        head.resolve(result);
      } else if (result === REFUSED_CLOSED) {
        this.#leave(head);
        this.#host.countRefusal();
        head.reject(new ClosedError());
      } else {
        this.#watch(seq);
        break;
      }
    }
    if (this.#drains.length !== 0) {
      // SEQ before the depth read, as above: a release after it wakes this drain.
      const seq = Atomics.load(this.#i32, SEQ_I32);
      if (this.#host.depth() === 0) {
        for (const resolve of this.#drains.splice(0)) resolve();
        this.#unholdIfIdle();
      } else {
        this.#watch(seq);
      }
    }
  }

  /** One pending waitAsync per instance; any notify after `seq` was read resolves it. */
  #watch(seq: number): void {
    if (this.#watching) return;
    const result = Atomics.waitAsync(this.#i32, SEQ_I32, seq);
    if (!result.async) {
      queueMicrotask(() => this.onChange()); // seq moved since it was read: look again
      return;
    }
    this.#watching = true;
    void result.value.then(this.#woken);
    if (!this.#registered) {
      this.#registered = true;
      orphanedWaits.register(this, this.#i32);
    }
  }

  /**
   * The wait's continuation holds the room weakly: once its waiters have left (abort, timeout)
   * the wait stays pending until some notify, which a release with nobody waiting never sends,
   * and a strong hold would keep a dropped admission (its buffer and its rotation timer) for
   * good. While anyone is here, #hold's timer holds the room. A function of its own: a closure
   * made where `this` is captured would share that context, and hold the room through it.
   */
  static #wakeUp(self: WeakRef<WaitingRoom>): () => void {
    return () => {
      const room = self.deref();
      if (room === undefined) return;
      room.#watching = false;
      room.onChange();
    };
  }

  #giveUp(waiter: Waiter, err: Error, isRefusal: boolean): void {
    if (!this.#leave(waiter)) return;
    if (isRefusal) this.#host.countRefusal();
    waiter.reject(err);
    this.onChange(); // the next waiter may fit now that the head is gone
  }

  /** Removes a waiter and everything it registered; false if it had already left. */
  #leave(waiter: Waiter): boolean {
    if (!this.#queue.remove(waiter)) return false;
    // Whoever takes the count to zero clears the flag; it re-checks the count (see
    // StateFlags.clearWaiting).
    if (Atomics.sub(this.#i32, WAITERS_I32, 1) === 1) this.#host.clearWaitingFlag();
    clearLongTimeout(waiter.timer);
    if (waiter.signal) unfollowAbort(waiter.signal, waiter);
    this.#unholdIfIdle();
    return true;
  }

  // A pending Atomics.waitAsync does not keep Node 20 alive: hold a ref'd handle while this
  // instance has waiters or drains, or the process could exit under them. The handle also holds
  // the room itself (its argument), which the wait's continuation holds only weakly: a caller
  // may drop the admission while it waits for another thread's release.
  #hold(): void {
    this.#keepAlive ??= setInterval(holdRoom, 1 << 30, this);
  }

  #unholdIfIdle(): void {
    if (this.#keepAlive !== undefined && !this.interested) {
      clearInterval(this.#keepAlive);
      this.#keepAlive = undefined;
    }
  }
}
