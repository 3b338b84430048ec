/**
 * Cooperative cancellation, shared between the runtime and its workers. One Int32 word per
 * claim slot: the main thread stores `generation << 1 | 1` when the caller aborts or its
 * deadline passes; the worker compares against the claim it holds. A slot reused by a later
 * task carries a newer generation, so a stale flag never cancels the wrong task.
 */
import type { Claim } from '../admission/index.js';

export function cancelledWord(claim: Claim): number {
  return (claim.generation << 1) | 1;
}

/** Main thread: flag the task and wake a worker blocked on its signal. */
export function requestCancel(words: Int32Array, claim: Claim): void {
  Atomics.store(words, claim.slot, cancelledWord(claim));
  Atomics.notify(words, claim.slot);
}

/** Worker: has the main thread asked this task to stop? */
export function isCancelled(words: Int32Array, claim: Claim): boolean {
  return Atomics.load(words, claim.slot) === cancelledWord(claim);
}
