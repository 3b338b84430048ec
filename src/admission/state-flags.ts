import {
  CLOSED_BIT_32,
  CLOSED_BIT_64,
  SEQ_I32,
  STATE_I32,
  STATE_U64,
  WAITERS_I32,
  WAITING_BIT_32,
  WAITING_BIT_64,
} from './layout.js';

/**
 * The state word's two flags (see layout.ts), set, cleared and read off the hot path. They sit
 * in the counters' word so that a reservation and a release see them in the same atomic step as
 * the counts; the reservation and the release themselves stay in BoundedAdmission, where reading
 * them costs no extra hop.
 *
 * Invariants: CLOSED is set once, by close(), and never cleared. WAITING is set while WAITERS is
 * non-zero, but for the two moments clearWaiting describes; only whoever takes WAITERS to zero
 * clears it, and a non-zero count always ends with the flag set again.
 * Memory ordering: each flag change is one sequentially consistent read-modify-write of the
 * state word, so it never undoes a concurrent reservation or release (an or/and, never a store);
 * a re-set bumps SEQ before it notifies, as a release's wake does (BoundedAdmission, "Memory
 * ordering").
 * Abort safety: no signal reaches it; the waiter that aborts leaves through WaitingRoom, which
 * calls clearWaiting when it was the last.
 * Throws: nothing.
 */
export class StateFlags {
  readonly #i32: Int32Array;
  readonly #u64: BigUint64Array;
  /** The state word is the 64-bit one (BigInt); otherwise the Int32 one. */
  readonly #wide: boolean;

  /**
   * The admission's own views, not new ones: its steps on the word go through the same arrays
   * whichever part takes them (the preemption tests tell instances apart by their arrays).
   */
  constructor(i32: Int32Array, u64: BigUint64Array, wide: boolean) {
    this.#i32 = i32;
    this.#u64 = u64;
    this.#wide = wide;
  }

  get closed(): boolean {
    return this.#wide
      ? Atomics.load(this.#u64, STATE_U64) >= CLOSED_BIT_64
      : Atomics.load(this.#i32, STATE_I32) >= CLOSED_BIT_32;
  }

  close(): void {
    if (this.#wide) Atomics.or(this.#u64, STATE_U64, CLOSED_BIT_64);
    else Atomics.or(this.#i32, STATE_I32, CLOSED_BIT_32);
  }

  setWaiting(): void {
    if (this.#wide) Atomics.or(this.#u64, STATE_U64, WAITING_BIT_64);
    else Atomics.or(this.#i32, STATE_I32, WAITING_BIT_32);
  }

  /**
   * Called by whoever took WAITERS to zero. Another instance may have counted a new waiter in
   * the meantime: clear, then re-check the count and set again, so a non-zero count always
   * ends with the flag set (its own incrementer sets it too, after counting). A release that
   * ran while the flag was down saw no flag and woke nobody, so setting it again also wakes.
   * That waiter may leave before the flag is set again: re-check, and clear again if the
   * count is back to zero, or the flag would stay set with nobody waiting ('queued' forever).
   * Between the clear and the re-set, a waiter counted meanwhile is queued with the flag down.
   * Another thread's tryAdmit in that window may take room first: that is not barging, as the
   * waiter counts as queued from the moment the flag shows it (its admit has not returned, and
   * its tries before that are ordinary attempts). Its own instance knows better, so tryAdmit
   * there also checks the local queue.
   */
  clearWaiting(): void {
    for (;;) {
      if (this.#wide) Atomics.and(this.#u64, STATE_U64, ~WAITING_BIT_64);
      else Atomics.and(this.#i32, STATE_I32, ~WAITING_BIT_32);
      if (Atomics.load(this.#i32, WAITERS_I32) === 0) return;
      this.setWaiting();
      // Bump, then notify, as a release's wake does: a waiter between its SEQ read and its wait
      // sees the change. This instance's own room is the caller, so it needs no onChange.
      Atomics.add(this.#i32, SEQ_I32, 1);
      Atomics.notify(this.#i32, SEQ_I32);
      if (Atomics.load(this.#i32, WAITERS_I32) !== 0) return;
    }
  }
}
