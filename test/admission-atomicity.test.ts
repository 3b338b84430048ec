/**
 * Each shared step of the admission is one atomic operation: the check and the reservation (one
 * compare-exchange on the state word), taking a claim slot, and a claim's release (one
 * compare-exchange on its slot word, the cost read before it). Another thread is an attached
 * instance in this thread, run between two steps by wrapping one Atomics call, so each test
 * depends on the current call order. The threaded stress test can catch a split step only when
 * the scheduler happens to interleave there (it missed three of these in one run); these cannot miss.
 */
import { describe, expect, it } from 'vitest';
import { CLAIMS_I32, MAX_CLAIM_SLOTS, SLOTS_BYTE_OFFSET } from '../src/admission/layout.js';
import { BoundedAdmission, type Claim, type Permit, type Refusal } from '../src/index.js';
import { admitted, interleaveAfter, WORD_MODES, withOtherThread } from './fixtures/admission-interleave.js';

/** The state word, in either view (Int32 or BigUint64: both index 0 at byte 0). */
const stateWord = (array: ArrayBufferView, index: number): boolean => array.byteOffset === 0 && index === 0;
/** A claim slot word (the BigUint64 view that starts at SLOTS_BYTE_OFFSET). */
const slotWord = (array: ArrayBufferView): boolean => array.byteOffset === SLOTS_BYTE_OFFSET;

function during<T>(restore: () => void, step: () => T): T {
  try {
    return step();
  } finally {
    restore();
  }
}

describe.each(WORD_MODES)('reservation at the check (%s)', (_mode, units) => {
  // Kills: bounded-admission.ts #reserveNarrow / #reserveWide taking room with Atomics.add after
  // the check instead of the compare-exchange (both survived the stress test once).
  it('takes nothing when another thread takes the last room between its check and its reservation', () => {
    const { admission, otherThread } = withOtherThread({ requests: 2, units });
    // Taken through the other instance: on the Int32 word this one's first compare-exchange
    // expects the word as it last left it (empty), fails, and its read of the word after that
    // is where the other thread cuts in (on the 64-bit word, its first read).
    const first = admitted(otherThread);
    let between: Permit | Refusal | undefined;
    const result = during(
      interleaveAfter('load', admission.buffer, stateWord, () => {
        between = otherThread.tryAdmit();
      }),
      () => admission.tryAdmit(),
    );
    expect(between?.ok).toBe(true);
    expect(result).toEqual({ ok: false, reason: 'requests' });
    expect(admission.report().depth).toBe(2);
    first.release();
    if (between?.ok) between.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
  });
});

describe('claims across threads', () => {
  // Kills: claims.ts acquire() taking a free slot with a store instead of the compare-exchange.
  it('two instances taking a slot at once end up with different slots', () => {
    const { admission, otherThread } = withOtherThread({ requests: 4 });
    const mine = admitted(admission);
    const theirs = admitted(otherThread);
    let theirClaim: Claim | undefined;
    const myClaim = during(
      interleaveAfter('load', admission.buffer, slotWord, () => {
        theirClaim = theirs.toClaim();
      }),
      () => mine.toClaim(),
    );
    expect(theirClaim).toBeDefined();
    expect(myClaim.slot).not.toBe(theirClaim!.slot);
    admission.releaseClaim(myClaim);
    otherThread.releaseClaim(theirClaim!);
    expect(admission.report().depth).toBe(0);
  });

  // Found by the preemption explorer (admission-preempt.test.ts). There are as many slots as
  // requests, so a permit always has a free slot; one scan of the slots could still miss it
  // when another thread frees a slot the scan has passed and takes one it has not reached.
  it('a claim finds a slot when one is freed behind its scan and another taken ahead of it', () => {
    const admission = new BoundedAdmission({ requests: 3 });
    const second = BoundedAdmission.attach(admission.buffer);
    const third = BoundedAdmission.attach(admission.buffer);
    const secondClaim = admitted(second).toClaim();
    const thirdClaim = admitted(third).toClaim();
    expect([secondClaim.slot, thirdClaim.slot]).toEqual([0, 1]);
    const mine = admitted(admission); // the bound is full; slot 2 is free
    let taken: Claim | undefined;
    const myClaim = during(
      interleaveAfter('load', admission.buffer, slotWord, () => {
        second.releaseClaim(secondClaim); // frees slot 0, which my scan has just passed
        taken = admitted(third).toClaim(); // takes slot 2, which my scan has not reached
      }),
      () => mine.toClaim(),
    );
    expect(taken?.slot).toBe(2);
    expect(myClaim.slot).toBe(0);
    expect(admission.report().depth).toBe(3);
    for (const claim of [myClaim, thirdClaim, taken!]) admission.releaseClaim(claim);
    expect(admission.report().depth).toBe(0);
  });

  // With more requests than slots, a claim can be refused. One refused while a slot is free
  // must not be: a refusal that first counted itself among the reserved (an Atomics.add, undone
  // after) made a claim taken just then see every slot reserved, though one was free.
  it('a claim refused when every slot is reserved does not make another refused while one is free', () => {
    const admission = new BoundedAdmission({ requests: MAX_CLAIM_SLOTS + 2 });
    const other = BoundedAdmission.attach(admission.buffer);
    const claims: Claim[] = [];
    for (let i = 0; i < MAX_CLAIM_SLOTS; i++) claims.push(admitted(admission).toClaim());
    const mine = admitted(admission);
    const theirs = admitted(other);
    let theirClaim: Claim | string | undefined;
    // Right after my claim's first step on the count of reserved slots, whatever that step is.
    const claimsWord = (array: ArrayBufferView, index: number): boolean =>
      array instanceof Int32Array && array.byteOffset === 0 && index === CLAIMS_I32;
    const between = (): void => {
      if (theirClaim !== undefined) return;
      other.releaseClaim(claims.shift()!); // one slot free now
      try {
        theirClaim = theirs.toClaim();
      } catch (err) {
        theirClaim = (err as { code?: string }).code;
      }
    };
    const restores = (['load', 'add'] as const).map((op) =>
      interleaveAfter(op, admission.buffer, claimsWord, between),
    );
    let myCode: string | undefined;
    try {
      mine.toClaim();
    } catch (err) {
      myCode = (err as { code?: string }).code;
    } finally {
      for (const restore of restores) restore();
    }
    // Before: theirs refused (OMNI_ERR_CLAIMS_EXHAUSTED) while the freed slot stayed free.
    expect(typeof theirClaim).toBe('object');
    expect(myCode).toBe('OMNI_ERR_CLAIMS_EXHAUSTED'); // the freed slot is theirs: all in use
    expect(mine.moved).toBe(false);
    mine.release();
    for (const claim of [...claims, theirClaim as Claim]) admission.releaseClaim(claim);
    expect(admission.report().depth).toBe(0);
  });

  // Kills: claims.ts acquire() reserving with a store of the count it loaded, plus one, instead
  // of the compare-exchange: a reservation made between the two was lost, and the count said
  // fewer slots were reserved than were held (the threaded tests never hit that window).
  it('two claims reserving at once are both counted', () => {
    const { admission, otherThread } = withOtherThread({ requests: 2 });
    const reserved = (): number => Atomics.load(new Int32Array(admission.buffer, 0, 16), CLAIMS_I32);
    const mine = admitted(admission);
    const theirs = admitted(otherThread);
    let theirClaim: Claim | undefined;
    const claimsWord = (array: ArrayBufferView, index: number): boolean =>
      array instanceof Int32Array && array.byteOffset === 0 && index === CLAIMS_I32;
    const myClaim = during(
      interleaveAfter('load', admission.buffer, claimsWord, () => {
        theirClaim = theirs.toClaim();
      }),
      () => mine.toClaim(),
    );
    expect(reserved()).toBe(2);
    admission.releaseClaim(myClaim);
    admission.releaseClaim(theirClaim!);
    expect(reserved()).toBe(0);
    expect(admission.report().depth).toBe(0);
  });

  // Kills: claims.ts release() as a check of the held bit followed by a store. The release today
  // loads nothing from the slot, so the hook fires only for such a split release.
  it('two copies of a claim released at once: exactly one wins', () => {
    const { admission, otherThread } = withOtherThread({ requests: 4, units: 10 });
    const claim = admitted(admission, 3).toClaim();
    let theirs = false;
    const mine = during(
      interleaveAfter('load', admission.buffer, slotWord, () => {
        theirs = otherThread.reclaim(structuredClone(claim));
      }),
      () => admission.reclaim(claim),
    );
    expect([mine, theirs].filter(Boolean)).toHaveLength(1);
    expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
  });

  // Kills: claims.ts release() reading the slot's cost after its compare-exchange, when the
  // freed slot may already hold another claim's cost.
  it('a release gives back the cost its claim held, even if the freed slot is taken again at once', () => {
    const { admission, otherThread } = withOtherThread({ requests: 2, units: 100 });
    const claim = admitted(admission, 7).toClaim();
    let reused: Claim | undefined;
    during(
      interleaveAfter('compareExchange', admission.buffer, slotWord, () => {
        reused = admitted(otherThread, 50).toClaim();
      }),
      () => admission.releaseClaim(claim),
    );
    expect(reused?.slot).toBe(claim.slot);
    expect(admission.report()).toMatchObject({ depth: 1, units: 50 });
    otherThread.releaseClaim(reused!);
    expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
  });
});
