/**
 * Claims: a permit moved into a plain, structured-cloneable claim that exactly one release
 * ends (from any attached instance, never a stale or foreign one), and the claim slots.
 */
import { describe, expect, it } from 'vitest';
import { MAX_CLAIM_SLOTS, SLOTS_BYTE_OFFSET } from '../src/admission/layout.js';
import { BoundedAdmission, type Claim } from '../src/index.js';
import { admitted, refusal } from './fixtures/admission-interleave.js';
import { thrown } from './fixtures/thrown.js';

describe('claims', () => {
  describe.each([
    ['request-only', undefined],
    ['with units', 100],
    ['with wide units (64-bit word)', 2 ** 40],
  ])('%s', (_mode, units) => {
    const expectUnits = (n: number): number => (units === undefined ? 0 : n);

    it('toClaim moves the permit into a plain claim that releaseClaim ends exactly once', () => {
      const admission = new BoundedAdmission({ requests: 3, units });
      const permit = admitted(admission, 40);
      const claim = permit.toClaim();
      expect(Object.keys(claim).sort()).toEqual(['admission', 'generation', 'slot', 'units']);
      expect(Object.getPrototypeOf(claim)).toBe(Object.prototype);
      expect(claim.units).toBe(40);
      expect(Number.isInteger(claim.slot) && Number.isInteger(claim.generation)).toBe(true);
      expect(permit.moved).toBe(true);
      expect(permit.released).toBe(false);
      expect(admission.report()).toMatchObject({ depth: 1, units: expectUnits(40) });
      expect(thrown(() => permit.release()).code).toBe('OMNI_ERR_PERMIT_MOVED');
      expect(thrown(() => permit.toClaim()).code).toBe('OMNI_ERR_PERMIT_MOVED');
      permit[Symbol.dispose](); // a moved permit is not the owner any more
      expect(admission.report()).toMatchObject({ depth: 1, units: expectUnits(40) });

      admission.releaseClaim(claim);
      expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 0 });
      expect(thrown(() => admission.releaseClaim(claim)).code).toBe('OMNI_ERR_PERMIT_RELEASED');
      expect(admission.reclaim(claim)).toBe(false);
      expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 0 });
    });

    it('reclaim returns true once and false after', () => {
      const admission = new BoundedAdmission({ requests: 3, units });
      const claim = admitted(admission, 5).toClaim();
      expect(admission.reclaim(claim)).toBe(true);
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
      expect(admission.reclaim(claim)).toBe(false);
      expect(thrown(() => admission.releaseClaim(claim)).code).toBe('OMNI_ERR_PERMIT_RELEASED');
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
    });

    it('lets exactly one of many structured-clone copies release', () => {
      const admission = new BoundedAdmission({ requests: 3, units });
      const other = admitted(admission, 7);
      const claim = admitted(admission, 30).toClaim();
      const copies: Claim[] = Array.from({ length: 8 }, () => structuredClone(claim));
      let wins = 0;
      const codes: string[] = [];
      copies.forEach((copy, i) => {
        if (i % 2 === 0) {
          if (admission.reclaim(copy)) wins += 1;
        } else {
          try {
            admission.releaseClaim(copy);
            wins += 1;
          } catch (err) {
            codes.push((err as { code: string }).code);
          }
        }
        expect(admission.report()).toMatchObject({ depth: 1, units: expectUnits(7) });
      });
      expect(wins).toBe(1);
      expect(codes).toEqual(Array(4).fill('OMNI_ERR_PERMIT_RELEASED'));
      expect(admission.reclaim(claim)).toBe(false);
      other.release();
      expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 0 });
    });

    it('releases from an attached instance', () => {
      const admission = new BoundedAdmission({ requests: 3, units });
      const attached = BoundedAdmission.attach(admission.buffer);
      expect(attached.report()).toEqual(admission.report());
      const claim = admitted(admission, 9).toClaim();
      expect(attached.report()).toMatchObject({ depth: 1, units: expectUnits(9) });
      attached.releaseClaim(structuredClone(claim));
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
      expect(admission.reclaim(claim)).toBe(false);
      // And the other way round.
      const back = admitted(attached, 11).toClaim();
      expect(admission.report()).toMatchObject({ depth: 1, units: expectUnits(11) });
      expect(admission.reclaim(back)).toBe(true);
      expect(attached.reclaim(back)).toBe(false);
      expect(attached.report()).toMatchObject({ depth: 0, units: 0, rejected: 0 });
    });

    it("uses the cost recorded in the slot, not the claim's informational units", () => {
      const admission = new BoundedAdmission({ requests: 3, units });
      const claim = admitted(admission, 50).toClaim();
      admission.releaseClaim({ ...claim, units: 1 });
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
    });

    it('never lets a stale claim release the holder of a reused slot', () => {
      // One request means one claim slot: the second claim must reuse it.
      const admission = new BoundedAdmission({ requests: 1, units });
      const first = admitted(admission, 20).toClaim();
      const staleCopy = structuredClone(first);
      admission.releaseClaim(first);
      const second = admitted(admission, 60).toClaim();
      expect(second.slot).toBe(first.slot);
      expect(second.generation).not.toBe(first.generation);
      expect(admission.report()).toMatchObject({ depth: 1, units: expectUnits(60) });
      expect(thrown(() => admission.releaseClaim(staleCopy)).code).toBe('OMNI_ERR_PERMIT_RELEASED');
      expect(admission.reclaim(staleCopy)).toBe(false);
      expect(admission.reclaim(first)).toBe(false);
      expect(admission.report()).toMatchObject({ depth: 1, units: expectUnits(60) });
      // A local permit in between does not disturb the claim either.
      expect(refusal(admission, 0).reason).toBe('requests');
      admission.releaseClaim(second);
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
      const third = admitted(admission, 1).toClaim();
      expect(admission.reclaim(second)).toBe(false);
      expect(admission.reclaim(staleCopy)).toBe(false);
      expect(admission.report()).toMatchObject({ depth: 1, units: expectUnits(1) });
      expect(admission.reclaim(third)).toBe(true);
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
    });

    it('treats a never-issued but well-formed claim as spent', () => {
      const admission = new BoundedAdmission({ requests: 2, units });
      const id = admitted(admission, 1).toClaim().admission; // slot 0, generation 0, still held
      expect(
        thrown(() => admission.releaseClaim({ admission: id, slot: 1, generation: 0, units: 1 })).code,
      ).toBe('OMNI_ERR_PERMIT_RELEASED');
      expect(admission.reclaim({ admission: id, slot: 1, generation: 5, units: 1 })).toBe(false);
      expect(admission.report()).toMatchObject({ depth: 1, units: expectUnits(1) });
    });

    it("refuses another admission's claim even when its slot and generation match", () => {
      const a = new BoundedAdmission({ requests: 2, units });
      const b = new BoundedAdmission({ requests: 2, units });
      const claimA = admitted(a, 1).toClaim();
      const claimB = admitted(b, 1).toClaim();
      expect(claimA.slot).toBe(claimB.slot);
      expect(claimA.generation).toBe(claimB.generation);
      expect(thrown(() => b.releaseClaim(claimA)).code).toBe('OMNI_ERR_INVALID_CLAIM');
      expect(b.reclaim(claimA)).toBe(false); // the owner's non-throwing recovery path
      expect(b.report()).toMatchObject({ depth: 1 });
      b.releaseClaim(claimB);
      a.releaseClaim(claimA);
      expect(a.report().depth + b.report().depth).toBe(0);
    });

    // Shapes of claims that are not claims of this admission (the first ones lack the id).
    const malformed: Array<(id: number) => unknown> = [
      () => null,
      () => undefined,
      () => 5,
      () => 'claim',
      () => ({}),
      () => ({ slot: 0, generation: 0, units: 1 }), // no admission id
      (id) => ({ admission: id + 1, slot: 0, generation: 0, units: 1 }),
      (id) => ({ admission: id, generation: 0, units: 1 }),
      (id) => ({ admission: id, slot: 0, units: 1 }),
      (id) => ({ admission: id, slot: -1, generation: 0, units: 1 }),
      (id) => ({ admission: id, slot: 0.5, generation: 0, units: 1 }),
      (id) => ({ admission: id, slot: 2, generation: 0, units: 1 }), // only 2 slots
      (id) => ({ admission: id, slot: 1e9, generation: 0, units: 1 }),
      (id) => ({ admission: id, slot: Number.NaN, generation: 0, units: 1 }),
      (id) => ({ admission: id, slot: '0', generation: 0, units: 1 }),
      (id) => ({ admission: id, slot: 0, generation: -1, units: 1 }),
      (id) => ({ admission: id, slot: 0, generation: 1.5, units: 1 }),
      (id) => ({ admission: id, slot: 0, generation: 2 ** 53, units: 1 }),
      (id) => ({ admission: id, slot: 0, generation: Number.POSITIVE_INFINITY, units: 1 }),
      (id) => ({ admission: id, slot: 0, generation: '0', units: 1 }),
      // Fields that throw as they are read: reclaim() threw the getter's error (it promises not
      // to throw), releaseClaim() threw it uncoded.
      (id) => ({
        admission: id,
        get slot(): never {
          throw new Error('a getter that throws');
        },
        generation: 0,
        units: 1,
      }),
      () =>
        new Proxy(
          {},
          {
            get() {
              throw new Error('a trap that throws');
            },
          },
        ),
    ];

    it.each(malformed.map((make, i) => [i, make] as const))(
      'releaseClaim throws OMNI_ERR_INVALID_CLAIM for malformed claim #%i, reclaim returns false, nothing changes',
      (_i, make) => {
        const admission = new BoundedAdmission({ requests: 2, units });
        const held = admitted(admission, 3).toClaim();
        const claim = make(held.admission);
        const before = admission.report();
        expect(thrown(() => admission.releaseClaim(claim as Claim)).code).toBe('OMNI_ERR_INVALID_CLAIM');
        expect(admission.reclaim(claim as Claim)).toBe(false);
        expect(admission.report()).toEqual(before);
        admission.releaseClaim(held);
      },
    );

    it('reads a claim once: one whose slot reads otherwise the next time still releases exactly', () => {
      // Checked on one read and used on another, the slot below read null: index 0 freed the
      // real slot while the units given back were undefined, a reservation lost for good.
      const admission = new BoundedAdmission({ requests: 2, units });
      const genuine = admitted(admission, 3).toClaim();
      expect(genuine.slot).toBe(0);
      let reads = 0;
      const shifting = {
        ...genuine,
        get slot() {
          reads += 1;
          return (reads === 1 ? genuine.slot : null) as number;
        },
      };
      admission.releaseClaim(shifting);
      expect(reads).toBe(1);
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
      expect(thrown(() => admission.releaseClaim(genuine)).code).toBe('OMNI_ERR_PERMIT_RELEASED');
    });
  });
});

describe('claim slots', () => {
  it('throws OMNI_ERR_CLAIMS_EXHAUSTED when every slot is taken and leaves the permit held', () => {
    const admission = new BoundedAdmission({ requests: MAX_CLAIM_SLOTS + 1 });
    const claims: Claim[] = [];
    for (let i = 0; i < MAX_CLAIM_SLOTS; i++) claims.push(admitted(admission, 1).toClaim());
    const last = admitted(admission, 1);
    expect(thrown(() => last.toClaim()).code).toBe('OMNI_ERR_CLAIMS_EXHAUSTED');
    expect(last.moved).toBe(false);
    expect(admission.reclaim(claims[0]!)).toBe(true);
    const moved = last.toClaim(); // a slot came free: the same permit can move now
    expect(moved.slot).toBe(claims[0]!.slot);
    for (const claim of [moved, ...claims.slice(1)]) admission.releaseClaim(claim);
    expect(admission.report().depth).toBe(0);
  });

  // 2^30 real reuses of one slot take minutes, so the slot word is set to a late generation
  // directly (generation << 1, free), as if the slot had been reused that often.
  const slotWord = (admission: BoundedAdmission) =>
    new BigUint64Array(admission.buffer, SLOTS_BYTE_OFFSET, 1);

  it.each([
    ['past 30 bits', 2 ** 30 - 1],
    ['past 32 bits', 2 ** 32 - 1],
    ['one before the 53-bit wrap (the last generation is used too)', 2 ** 53 - 2],
    ['at the 53-bit wrap', 2 ** 53 - 1],
  ])('a stale claim never matches a reused slot %s', (_at, generation) => {
    const admission = new BoundedAdmission({ requests: 1, units: 100 });
    slotWord(admission)[0] = BigInt(generation) << 1n;
    const first = admitted(admission, 20).toClaim();
    expect(first.generation).toBe(generation);
    const stale = structuredClone(first);
    admission.releaseClaim(first);
    const second = admitted(admission, 60).toClaim();
    expect(second.slot).toBe(first.slot);
    expect(second.generation).toBe(generation === 2 ** 53 - 1 ? 0 : generation + 1);
    expect(admission.reclaim(stale)).toBe(false);
    expect(thrown(() => admission.releaseClaim(stale)).code).toBe('OMNI_ERR_PERMIT_RELEASED');
    expect(admission.report()).toMatchObject({ depth: 1, units: 60 });
    expect(refusal(admission, 0).reason).toBe('requests'); // the bound still holds
    expect(admission.reclaim(second)).toBe(true);
    expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
  });
});
