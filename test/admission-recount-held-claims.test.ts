/**
 * kRecount (run by Runtime.close once every thread has stopped) gives back what the counts hold
 * beyond the claims still held: a claim whose release was cut off between its two steps (slot
 * freed, counts not yet given back) left its counts behind. The runtime test of that case holds
 * no other claim; here one stays held, and recount must leave both its request and its units in
 * place for its owner's reclaim.
 */
import { describe, expect, it } from 'vitest';
import type { Claim } from '../src/admission/internal.js';
import { kRecount } from '../src/admission/internal.js';
import { SLOT_HELD, SLOTS_BYTE_OFFSET, SLOTS_I32 } from '../src/admission/layout.js';
import { BoundedAdmission } from '../src/index.js';
import { WORD_MODES } from './fixtures/admission-interleave.js';

function claimOf(admission: BoundedAdmission, cost: number): Claim {
  const result = admission.tryAdmit(cost);
  if (!result.ok) throw new Error(`expected an admission, refused: ${result.reason}`);
  return result.toClaim();
}

/** A release's first step only, as a thread terminated inside it leaves it: the slot is freed. */
function freeSlotOnly(admission: BoundedAdmission, claim: Claim): void {
  const count = Atomics.load(new Int32Array(admission.buffer, 0, 16), SLOTS_I32);
  const slots = new BigUint64Array(admission.buffer, SLOTS_BYTE_OFFSET, count);
  const held = (BigInt(claim.generation) << 1n) | SLOT_HELD;
  const freed = BigInt(claim.generation + 1) << 1n;
  expect(Atomics.compareExchange(slots, claim.slot, held, freed)).toBe(held);
}

describe.each(WORD_MODES)('recount with a claim still held (%s)', (_mode, units) => {
  it('gives back only the torn claim, and the held one is reclaimed in full', () => {
    const admission = new BoundedAdmission({ requests: 4, units });
    const kept = claimOf(admission, 3);
    const torn = claimOf(admission, 2);
    freeSlotOnly(admission, torn);
    admission[kRecount]();
    const heldUnits = units === undefined ? 0 : 3;
    expect(admission.report()).toMatchObject({ depth: 1, units: heldUnits });
    expect(admission.reclaim(kept)).toBe(true);
    expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
  });
});
