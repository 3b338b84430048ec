import { ClaimsExhaustedError, InvalidClaimError } from '../errors.js';
import type { Claim } from './internal.js';
import { costsByteOffset, GENERATION_MASK, ID_I32, SLOT_HELD, SLOTS_BYTE_OFFSET } from './layout.js';

/**
 * Per-permit shared slots, used only once a permit becomes a claim that another thread may
 * release. Slot word = generation << 1 | held.
 *
 * Invariants: a claim's release succeeds at most once across all its copies (one CAS from
 * held-at-generation-g to free-at-generation-g+1); a stale claim (generation g while the slot
 * holds g+1 or later) never matches. Generations wrap after 2^30 reuses of one slot.
 * Memory ordering: the cost is written after the slot is taken and before the claim leaves
 * this thread; the claim reaches another thread by postMessage, which orders the two.
 */
export class ClaimTable {
  readonly #words: Int32Array;
  readonly #costs: Float64Array;
  readonly #count: number;
  readonly #id: number;
  #hint = 0;

  constructor(buffer: SharedArrayBuffer, count: number) {
    this.#count = count;
    this.#id = new Int32Array(buffer, 0, 16)[ID_I32]!;
    this.#words = new Int32Array(buffer, SLOTS_BYTE_OFFSET, count);
    this.#costs = new Float64Array(buffer, costsByteOffset(count), count);
  }

  /** Takes a free slot for `units`. Throws OMNI_ERR_CLAIMS_EXHAUSTED when none is free. */
  acquire(units: number): Claim {
    const words = this.#words;
    const n = this.#count;
    for (let k = 0; k < n; k++) {
      let slot = this.#hint + k;
      if (slot >= n) slot -= n;
      const word = Atomics.load(words, slot);
      // CAS, not store: another thread's instance may be taking the same free slot.
      if ((word & SLOT_HELD) === 0 && Atomics.compareExchange(words, slot, word, word | SLOT_HELD) === word) {
        this.#costs[slot] = units;
        this.#hint = slot + 1 === n ? 0 : slot + 1;
        return { admission: this.#id, slot, generation: word >>> 1, units };
      }
    }
    throw new ClaimsExhaustedError(`all ${n} claim slots are in use`);
  }

  /**
   * Frees the claim's slot if this copy wins; returns the units it held, or -1 when the claim
   * was already released (by another copy) or is stale.
   */
  release(claim: Claim): number {
    const slot = claim?.slot;
    const generation = claim?.generation;
    if (
      claim?.admission !== this.#id ||
      !Number.isInteger(slot) ||
      slot < 0 ||
      slot >= this.#count ||
      !Number.isInteger(generation) ||
      generation < 0 ||
      generation > GENERATION_MASK
    ) {
      throw new InvalidClaimError();
    }
    const held = (generation << 1) | SLOT_HELD;
    // Read before the CAS: once the slot is freed it may be reused and its cost overwritten.
    // If the CAS wins, the slot was held at this generation throughout, so the cost is ours.
    const units = this.#costs[slot]!;
    const free = ((generation + 1) & GENERATION_MASK) << 1;
    return Atomics.compareExchange(this.#words, slot, held, free) === held ? units : -1;
  }
}
