import { ClaimsExhaustedError } from '../errors.js';
import type { Claim } from './internal.js';
import {
  BLOCK_SHIFT,
  BLOCK_SLOTS,
  blockCount,
  blockCountsByteOffset,
  CLAIMS_I32,
  costsByteOffset,
  GENERATION_LIMIT,
  ID_I32,
  SLOT_HELD,
  SLOTS_BYTE_OFFSET,
} from './layout.js';

/** ClaimTable.release: the claim was released already (by any copy), or is stale. */
export const SPENT = -1;
/** ClaimTable.release: not a well-formed claim of this admission. */
export const NOT_A_CLAIM = -2;

/**
 * Per-permit shared slots, used only once a permit becomes a claim that another thread may
 * release. Slot word (BigUint64) = generation << 1 | held, generation in 0..2^53-1.
 *
 * Invariants: a claim's release succeeds at most once across all its copies (one CAS from
 * held-at-generation-g to free-at-generation-g+1); a stale claim (generation g while the slot
 * holds a later one) never matches. Exhaustion is exact: a claim first reserves one of the
 * slots in CLAIMS and is refused only when all are reserved; once reserved, a free slot
 * exists at every instant (a slot is held only under a reservation, and freed before its
 * reservation is given back), so acquire scans until it takes one. The generation is 53 bits so
 * that it never wraps in practice (2^53 reuses of one slot take decades at ten million a
 * second): a 30-bit one wrapped after ~10^9 reuses, a minute or two of one slot reused nonstop,
 * and a stale copy could then match the new holder.
 * Claims are off the admit/release hot path (one per task that crosses threads), so the BigInt
 * word costs nothing that matters here.
 * Each block of slots counts its held ones (see BLOCK_SLOTS): a slot is taken, then counted;
 * freed, then uncounted. A count is only a guide for the search and may be off for a moment
 * either way; it stays too high for good when a thread is terminated between a release's two
 * steps, so the search reads every slot once a guided lap has found none.
 * Memory ordering: the cost is written after the slot is taken and before the claim leaves
 * this thread; the claim reaches another thread by postMessage, which orders the two.
 * Abort safety: nothing here waits or listens for a signal. A thread terminated between a
 * release's steps leaves its slot free but may leave its block counted (the last lap reads every
 * slot) and its CLAIMS reservation taken (left so: only an owner closed for good recounts, see
 * BoundedAdmission's kRecount).
 * Throws: OMNI_ERR_CLAIMS_EXHAUSTED (acquire, with every slot reserved); release never throws,
 * it answers SPENT or NOT_A_CLAIM.
 */
export class ClaimTable {
  readonly #header: Int32Array;
  readonly #words: BigUint64Array;
  readonly #costs: Float64Array;
  /** Held slots per block, a guide for the search. */
  readonly #blockHeld: Int32Array;
  readonly #count: number;
  readonly #id: number;
  #hint = 0;

  constructor(buffer: SharedArrayBuffer, count: number) {
    this.#count = count;
    this.#header = new Int32Array(buffer, 0, 16);
    this.#id = this.#header[ID_I32]!;
    this.#words = new BigUint64Array(buffer, SLOTS_BYTE_OFFSET, count);
    this.#costs = new Float64Array(buffer, costsByteOffset(count), count);
    this.#blockHeld = new Int32Array(buffer, blockCountsByteOffset(count), blockCount(count));
  }

  /** Takes a free slot for `units`. Throws OMNI_ERR_CLAIMS_EXHAUSTED when none is free. */
  acquire(units: number): Claim {
    const words = this.#words;
    const n = this.#count;
    // Reserve first: the count decides exhaustion (see CLAIMS_I32), then a slot surely is free.
    // A compare-exchange, not an add undone on refusal: the add would count the refused claim
    // among the reserved for a moment, and a claim made then would be refused with a slot free.
    for (;;) {
      const reserved = Atomics.load(this.#header, CLAIMS_I32);
      if (reserved >= n) throw new ClaimsExhaustedError(`all ${n} claim slots are in use`);
      if (Atomics.compareExchange(this.#header, CLAIMS_I32, reserved, reserved + 1) === reserved) break;
    }
    // A lap finds nothing only if other threads moved the free slot meanwhile, or a count stayed
    // too high: the first lap passes over blocks counted full, later ones read every slot.
    const blockHeld = this.#blockHeld;
    let slot = this.#hint;
    let guided = true;
    for (let seen = 0; ; ) {
      if (
        guided &&
        (slot & (BLOCK_SLOTS - 1)) === 0 &&
        Atomics.load(blockHeld, slot >> BLOCK_SHIFT) >= Math.min(BLOCK_SLOTS, n - slot)
      ) {
        slot += BLOCK_SLOTS;
        seen += BLOCK_SLOTS;
      } else {
        const word = Atomics.load(words, slot);
        // CAS, not store: another thread's instance may be taking the same free slot.
        if (
          (word & SLOT_HELD) === 0n &&
          Atomics.compareExchange(words, slot, word, word | SLOT_HELD) === word
        ) {
          // After the take: a count never leads a slot.
          Atomics.add(blockHeld, slot >> BLOCK_SHIFT, 1);
          this.#costs[slot] = units;
          this.#hint = slot + 1 === n ? 0 : slot + 1;
          return { admission: this.#id, slot, generation: Number(word >> 1n), units };
        }
        slot++;
        seen++;
      }
      if (slot >= n) slot = 0; // blocks start at multiples of BLOCK_SLOTS: a wrap lands on one
      if (seen >= n) {
        guided = false;
        seen = 0;
      }
    }
  }

  /**
   * Frees the claim's slot if this copy wins; returns the units it held, SPENT when it does not
   * (already released by another copy, or stale), or NOT_A_CLAIM for anything that is not a
   * well-formed claim of this admission. Each field is read once: a getter could answer
   * otherwise on a second read, and the values checked must be the values used. One that throws
   * (a getter, a Proxy's trap) makes no claim: reclaim() promises not to throw, and releaseClaim()
   * an OMNI_ERR_INVALID_CLAIM for anything that is not a claim.
   */
  release(claim: Claim): number {
    if (typeof claim !== 'object' || claim === null) return NOT_A_CLAIM;
    let admission: unknown;
    let slot: unknown;
    let generation: unknown;
    try {
      admission = claim.admission;
      slot = claim.slot;
      generation = claim.generation;
    } catch {
      return NOT_A_CLAIM;
    }
    if (admission !== this.#id || !isIndex(slot, this.#count) || !isIndex(generation, GENERATION_LIMIT)) {
      return NOT_A_CLAIM;
    }
    const held = (BigInt(generation) << 1n) | SLOT_HELD;
    // Read before the CAS: once the slot is freed it may be reused and its cost overwritten.
    // If the CAS wins, the slot was held at this generation throughout, so the cost is ours.
    const units = this.#costs[slot]!;
    const next = generation + 1 === GENERATION_LIMIT ? 0 : generation + 1;
    if (Atomics.compareExchange(this.#words, slot, held, BigInt(next) << 1n) !== held) return SPENT;
    Atomics.sub(this.#blockHeld, slot >> BLOCK_SHIFT, 1); // after the free: see acquire
    // After the slot is free: a reservation never counts fewer slots than are held.
    Atomics.sub(this.#header, CLAIMS_I32, 1);
    return units;
  }

  /** The claims held now, and their units (every slot read: for a close, not a hot path). */
  held(): HeldClaims {
    let count = 0;
    let units = 0;
    for (let slot = 0; slot < this.#count; slot++) {
      if ((Atomics.load(this.#words, slot) & SLOT_HELD) !== 0n) {
        count++;
        units += this.#costs[slot]!;
      }
    }
    return { count, units };
  }
}

/** What the held claim slots add up to. */
export interface HeldClaims {
  readonly count: number;
  readonly units: number;
}

function isIndex(value: unknown, limit: number): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value < limit;
}
