/**
 * Cooperative cancellation, shared between the runtime and its workers. One Int32 word per
 * claim slot: the main thread stores `generation << 1 | 1` when the caller aborts or its
 * deadline passes; the worker compares against the claim it holds.
 *
 * Invariants: a slot's word is 0 or the cancel word of the claim last dispatched in that slot.
 * The word keeps only the generation's low 31 bits (claim generations are 53-bit), so it must
 * never outlive its claim: a later claim in the slot starts from 0 (a word left over from
 * 2^31 reuses ago would otherwise match it), and a claim whose slot has been reused never
 * writes (its work has ended; a write would erase the new claim's own cancel).
 * Memory ordering: only the main thread writes the words, and it writes a claim's starting 0
 * before posting the claim, so the worker that receives it never sees an older word.
 * Abort safety: a word asks a task to stop, it ends nothing itself: the claim stays held until
 * its work ends (DESIGN.md, admission invariant 7), and a stale request writes nothing.
 * Throws: nothing.
 */
import type { Claim } from '../admission/index.js';

export function cancelledWord(claim: Claim): number {
  return (claim.generation << 1) | 1;
}

/** Worker: has the main thread asked this task to stop? */
export function isCancelled(words: Int32Array, claim: Claim): boolean {
  return Atomics.load(words, claim.slot) === cancelledWord(claim);
}

/** Main thread's side of the words. */
export class CancelWords {
  readonly words: Int32Array;
  /** The generation of the claim last dispatched in each slot (main thread only; 53-bit exact). */
  readonly #current: Float64Array;

  constructor(slots: number) {
    this.words = new Int32Array(new SharedArrayBuffer(4 * slots));
    this.#current = new Float64Array(slots).fill(-1);
  }

  /** A claim is about to be posted to a worker: its slot now belongs to it, uncancelled. */
  dispatched(claim: Claim): void {
    this.#current[claim.slot] = claim.generation;
    Atomics.store(this.words, claim.slot, 0);
  }

  /**
   * Flags the task and wakes a worker blocked on its signal. Claims are only ever taken on
   * this thread, so a slot holding a newer generation cannot appear between the check and
   * the store: the check alone keeps a stale cancel from reaching the slot's new task.
   */
  request(claim: Claim): void {
    if (this.#current[claim.slot] !== claim.generation) return;
    Atomics.store(this.words, claim.slot, cancelledWord(claim));
    Atomics.notify(this.words, claim.slot); // a worker waiting on ctx.signal re-reads the word
  }
}
