/**
 * The search for a free claim slot reads a bounded number of shared words, however many slots
 * are held. It read one slot word after another from where the last claim was taken: with
 * every slot held but the one just behind that point (a saturated admission whose claims are
 * released out of order: of the two oldest, the later one first), a claim read all 65,536
 * slots, ~1 ms; with the 8 oldest of 65,536 released in random order, ~0.4 ms a claim. A
 * saturated Runtime (65,536 requests, 4 threads of uneven work) read 558 slots a call on
 * average, a whole lap now and then. Counted here through Atomics.load, never timed.
 */
import { describe, expect, it } from 'vitest';
import { BLOCK_SLOTS, blockCount, blockCountsByteOffset, MAX_CLAIM_SLOTS } from '../src/admission/layout.js';
import { BoundedAdmission, type Claim } from '../src/index.js';
import { admitted } from './fixtures/admission-interleave.js';

/** `make()`, counting the Atomics loads it makes on `buffer`. */
function countingLoads<T>(buffer: SharedArrayBuffer, make: () => T): { value: T; loads: number } {
  const real = Atomics.load;
  let loads = 0;
  Atomics.load = ((array: Int32Array, index: number) => {
    if (array.buffer === buffer) loads++;
    return real(array, index);
  }) as typeof Atomics.load;
  try {
    return { value: make(), loads };
  } finally {
    Atomics.load = real;
  }
}

/** Every slot a claim: the search then starts over at slot 0. */
function fullTable(slots: number): { admission: BoundedAdmission; claims: Claim[] } {
  const admission = new BoundedAdmission({ requests: slots });
  const claims = Array.from({ length: slots }, () => admitted(admission).toClaim());
  return { admission, claims };
}

/** The reservation's load, the counts of the blocks passed over, and two blocks of slots. */
const searchBound = (slots: number): number => 1 + blockCount(slots) + 2 * BLOCK_SLOTS;

describe('the claim slot search', () => {
  it('reads a bounded number of words for the only free slot, just behind where it starts', () => {
    const { admission, claims } = fullTable(MAX_CLAIM_SLOTS);
    let behind = claims[MAX_CLAIM_SLOTS - 1]!;
    for (let round = 0; round < 3; round++) {
      admission.releaseClaim(behind);
      const permit = admitted(admission);
      const { value, loads } = countingLoads(admission.buffer, () => permit.toClaim());
      expect(value.slot).toBe(behind.slot);
      expect(loads).toBeLessThanOrEqual(searchBound(MAX_CLAIM_SLOTS));
      behind = value; // the search now starts just past it again
    }
    expect(admission.report().depth).toBe(MAX_CLAIM_SLOTS);
  });

  it('two calls ending out of order leave the next search bounded too', () => {
    const { admission, claims } = fullTable(MAX_CLAIM_SLOTS);
    // The two oldest run; the second ends first, its slot is taken again, then the first ends.
    admission.releaseClaim(claims[1]!);
    expect(admitted(admission).toClaim().slot).toBe(1);
    admission.releaseClaim(claims[0]!);
    const permit = admitted(admission);
    const { value, loads } = countingLoads(admission.buffer, () => permit.toClaim());
    expect(value.slot).toBe(0);
    expect(loads).toBeLessThanOrEqual(searchBound(MAX_CLAIM_SLOTS));
  });

  // The last block is shorter when the slot count is not a multiple of BLOCK_SLOTS: its count
  // says full at its own length, so a lap passes over it as over any full block.
  it('passes over a full last block shorter than BLOCK_SLOTS by its count', () => {
    const slots = 2 * BLOCK_SLOTS + BLOCK_SLOTS - 1;
    const { admission, claims } = fullTable(slots);
    // Retaken, so that the next search starts at block 1's first slot.
    admission.releaseClaim(claims[BLOCK_SLOTS - 1]!);
    expect(admitted(admission).toClaim().slot).toBe(BLOCK_SLOTS - 1);
    admission.releaseClaim(claims[1]!);
    const permit = admitted(admission);
    const { value, loads } = countingLoads(admission.buffer, () => permit.toClaim());
    expect(value.slot).toBe(1);
    // The reservation, each block's count, and block 0's slots up to the free one.
    expect(loads).toBeLessThanOrEqual(1 + blockCount(slots) + 2);
  });

  // A block's count stays too high for good when a thread is terminated after a release freed
  // its slot and before it uncounted it (test/fixtures/torn-release-worker.ts frees slots so):
  // the search must still find that slot, by reading every slot once the counts show none.
  it('finds a free slot that its block still counts as held', () => {
    const slots = 3 * BLOCK_SLOTS;
    const { admission, claims } = fullTable(slots);
    const torn = claims[BLOCK_SLOTS + 5]!;
    admission.releaseClaim(torn);
    const counts = new Int32Array(admission.buffer, blockCountsByteOffset(slots), blockCount(slots));
    Atomics.add(counts, 1, 1); // as if the release had stopped before uncounting the slot
    expect(admitted(admission).toClaim().slot).toBe(torn.slot);
    expect(admission.report().depth).toBe(slots);
  });
});
