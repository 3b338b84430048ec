import { describe, expect, it } from 'vitest';
import { MAX_CLAIM_SLOTS, SLOTS_BYTE_OFFSET } from '../src/admission/layout.js';
import {
  type AdmissionReport,
  BoundedAdmission,
  type Claim,
  type Permit,
  type Refusal,
} from '../src/index.js';
import { WORD_MODES } from './fixtures/admission-interleave.js';
import { thrown } from './fixtures/thrown.js';

const MAX = Number.MAX_SAFE_INTEGER;

function admitted(admission: BoundedAdmission, cost?: number): Permit {
  const result = admission.tryAdmit(cost);
  if (!result.ok) throw new Error(`expected admission of ${cost}, refused: ${result.reason}`);
  return result;
}

function refusal(admission: BoundedAdmission, cost?: number): Refusal {
  const result = admission.tryAdmit(cost);
  if (result.ok) throw new Error(`expected a refusal of ${cost}, got a permit`);
  return result;
}

function state(report: AdmissionReport): Pick<AdmissionReport, 'depth' | 'units' | 'rejected'> {
  return { depth: report.depth, units: report.units, rejected: report.rejected };
}

describe('BoundedAdmission construction', () => {
  it('starts empty, with a plain JSON-safe report', () => {
    const requestOnly = new BoundedAdmission({ requests: 3 }).report();
    expect(requestOnly).toEqual({
      depth: 0,
      capacity: 3,
      rejected: 0,
      units: 0,
      unitCapacity: null,
      waiting: 0,
      leaked: 0,
    });
    const withUnits = new BoundedAdmission({ requests: 2, units: 100 }).report();
    expect(withUnits).toEqual({
      depth: 0,
      capacity: 2,
      rejected: 0,
      units: 0,
      unitCapacity: 100,
      waiting: 0,
      leaked: 0,
    });
    for (const report of [requestOnly, withUnits]) {
      expect(JSON.parse(JSON.stringify(report))).toEqual(report);
      expect(Object.getPrototypeOf(report)).toBe(Object.prototype);
    }
  });

  it('accepts the largest bounds', () => {
    expect(new BoundedAdmission({ requests: 2 ** 29 - 1 }).report().capacity).toBe(2 ** 29 - 1);
    expect(new BoundedAdmission({ requests: 1, units: MAX }).report().unitCapacity).toBe(MAX);
    // 9 + 53 bits = 62: the widest pair that packs.
    expect(new BoundedAdmission({ requests: 511, units: MAX }).report()).toMatchObject({
      capacity: 511,
      unitCapacity: MAX,
    });
    // 29 + 33 bits = 62.
    expect(new BoundedAdmission({ requests: 2 ** 29 - 1, units: 2 ** 33 - 1 }).report().capacity).toBe(
      2 ** 29 - 1,
    );
  });

  const badNumbers: unknown[] = [
    0,
    -1,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    '4',
    4n,
  ];

  it.each([...badNumbers, 2 ** 29, MAX, undefined, null])('rejects requests = %s', (requests) => {
    const err = thrown(() => new BoundedAdmission({ requests } as unknown as { requests: number }));
    expect(err).toBeInstanceOf(RangeError);
    expect(err.code).toBe('OMNI_ERR_INVALID_BOUND');
  });

  it.each([...badNumbers, MAX + 1, 2 ** 53, null])('rejects units = %s', (units) => {
    const err = thrown(() => new BoundedAdmission({ requests: 1, units } as unknown as { requests: number }));
    expect(err).toBeInstanceOf(RangeError);
    expect(err.code).toBe('OMNI_ERR_INVALID_BOUND');
  });

  it.each([
    { requests: 512, units: MAX },
    { requests: 2 ** 29 - 1, units: 2 ** 33 },
    { requests: 2 ** 20, units: 2 ** 42 },
  ])('rejects a pair that needs more than 62 bits: %o', (bounds) => {
    const err = thrown(() => new BoundedAdmission(bounds));
    expect(err).toBeInstanceOf(RangeError);
    expect(err.code).toBe('OMNI_ERR_INVALID_BOUND');
  });

  it.each([null, undefined, 5, 'requests', true])('rejects non-object bounds: %s', (bounds) => {
    const err = thrown(() => new BoundedAdmission(bounds as unknown as { requests: number }));
    expect(err).toBeInstanceOf(RangeError);
    expect(err.code).toBe('OMNI_ERR_INVALID_BOUND');
  });
});

describe('attach', () => {
  it.each([
    ['not a SharedArrayBuffer', () => new ArrayBuffer(4096)],
    ['too small for the header', () => new SharedArrayBuffer(16)],
    ['zeroed (no admission made it)', () => new SharedArrayBuffer(4096)],
    [
      'cut short: fewer claim slots than its header says',
      () => {
        const whole = new BoundedAdmission({ requests: 8, units: 100 }).buffer;
        const cut = new SharedArrayBuffer(whole.byteLength - 8);
        new Uint8Array(cut).set(new Uint8Array(whole, 0, cut.byteLength));
        return cut;
      },
    ],
  ])('refuses a buffer %s with OMNI_ERR_INVALID_ARGUMENT', (_what, make) => {
    expect(thrown(() => BoundedAdmission.attach(make() as SharedArrayBuffer)).code).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
  });

  it('the package exports Permit as a type only: no caller can make one that gives back capacity', async () => {
    const exported = await import('../src/index.js');
    expect('Permit' in exported).toBe(false);
  });
});

describe('tryAdmit', () => {
  it("refuses 'requests' once the request bound is held, and counts each refusal", () => {
    const admission = new BoundedAdmission({ requests: 2 });
    const a = admitted(admission);
    const b = admitted(admission);
    expect(a.ok).toBe(true);
    expect(admission.report()).toMatchObject({ depth: 2, rejected: 0 });
    expect(refusal(admission).reason).toBe('requests');
    expect(refusal(admission, 0).reason).toBe('requests');
    expect(admission.report()).toMatchObject({ depth: 2, rejected: 2 });
    a.release();
    admitted(admission).release();
    b.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 2 });
  });

  it("refuses 'units' when the cost does not fit beside what is held", () => {
    const admission = new BoundedAdmission({ requests: 10, units: 10 });
    const a = admitted(admission, 7);
    expect(refusal(admission, 4).reason).toBe('units');
    expect(admission.report()).toMatchObject({ depth: 1, units: 7, rejected: 1 });
    const b = admitted(admission, 3);
    expect(admission.report()).toMatchObject({ depth: 2, units: 10, rejected: 1 });
    expect(refusal(admission, 1).reason).toBe('units');
    a.release();
    b.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 2 });
  });

  it("refuses 'requests' before 'units' when both are exhausted", () => {
    const admission = new BoundedAdmission({ requests: 1, units: 5 });
    const held = admitted(admission, 5);
    expect(refusal(admission, 1).reason).toBe('requests');
    held.release();
  });

  it("refuses 'too-large' for a cost above the whole ceiling, even when empty", () => {
    const admission = new BoundedAdmission({ requests: 4, units: 100 });
    expect(refusal(admission, 101).reason).toBe('too-large');
    expect(refusal(admission, MAX).reason).toBe('too-large');
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 2 });
  });

  it("refuses 'queued' while a waiter is queued (no barging)", async () => {
    const admission = new BoundedAdmission({ requests: 2, units: 10 });
    const held = admitted(admission, 8);
    const waiting = admission.admit(5);
    expect(admission.report().waiting).toBe(1);
    // Cost 1 would fit beside the 8 held, but the waiter is ahead of it.
    expect(refusal(admission, 1).reason).toBe('queued');
    expect(admission.report()).toMatchObject({ depth: 1, rejected: 1 });
    held.release();
    const permit = await waiting;
    expect(admission.report()).toMatchObject({ depth: 1, units: 5, waiting: 0 });
    admitted(admission, 1).release();
    permit.release();
  });

  it("refuses 'closed' after close()", async () => {
    const admission = new BoundedAdmission({ requests: 2 });
    await admission.close();
    expect(admission.closed).toBe(true);
    expect(refusal(admission).reason).toBe('closed');
    expect(admission.report()).toMatchObject({ depth: 0, rejected: 1 });
    const withUnits = new BoundedAdmission({ requests: 2, units: 10 });
    await withUnits.close();
    expect(refusal(withUnits, 1).reason).toBe('closed');
    expect(withUnits.report()).toMatchObject({ depth: 0, rejected: 1 });
  });

  it('returns the same frozen refusal object for a reason every time, across instances', () => {
    const a = new BoundedAdmission({ requests: 1, units: 10 });
    const b = new BoundedAdmission({ requests: 1, units: 10 });
    const tooLarge = refusal(a, 11);
    expect(tooLarge).toEqual({ ok: false, reason: 'too-large' });
    expect(Object.keys(tooLarge).sort()).toEqual(['ok', 'reason']);
    expect(Object.isFrozen(tooLarge)).toBe(true);
    expect(refusal(a, 11)).toBe(tooLarge);
    expect(refusal(b, 11)).toBe(tooLarge);
    expect(() => {
      (tooLarge as { reason: string }).reason = 'requests';
    }).toThrow(TypeError);
    const heldA = admitted(a, 1);
    const full = refusal(a, 1);
    expect(full.reason).toBe('requests');
    expect(Object.isFrozen(full)).toBe(true);
    expect(refusal(a, 0)).toBe(full);
    const heldB = admitted(b, 1);
    expect(refusal(b, 1)).toBe(full);
    heldA.release();
    heldB.release();
    const units = new BoundedAdmission({ requests: 3, units: 10 });
    const big = admitted(units, 9);
    const noRoom = refusal(units, 2);
    expect(noRoom.reason).toBe('units');
    expect(Object.isFrozen(noRoom)).toBe(true);
    expect(refusal(units, 5)).toBe(noRoom);
    big.release();
  });

  it('counts refusals only, never admitted work', () => {
    const admission = new BoundedAdmission({ requests: 3, units: 6 });
    for (let i = 0; i < 50; i++) {
      const p = admitted(admission, i % 7);
      p.release();
    }
    expect(admission.report().rejected).toBe(0);
    const held = [admitted(admission, 2), admitted(admission, 2)];
    refusal(admission, 3); // units
    refusal(admission, 7); // too-large
    held.push(admitted(admission, 2));
    refusal(admission, 0); // requests
    expect(admission.report()).toMatchObject({ depth: 3, units: 6, rejected: 3 });
    for (const p of held) p.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 3 });
  });

  it('treats cost 0 as a request that takes no units', () => {
    const admission = new BoundedAdmission({ requests: 2, units: 5 });
    const full = admitted(admission, 5);
    const zero = admitted(admission, 0);
    expect(zero.units).toBe(0);
    expect(admission.report()).toMatchObject({ depth: 2, units: 5 });
    expect(refusal(admission, 0).reason).toBe('requests');
    zero.release();
    full.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 1 });
  });

  it('defaults the cost to 1', () => {
    const admission = new BoundedAdmission({ requests: 2, units: 5 });
    const p = admitted(admission);
    expect(p.units).toBe(1);
    expect(admission.report()).toMatchObject({ depth: 1, units: 1 });
    p.release();
  });

  it('admits a cost exactly equal to the ceiling when empty, and only then', () => {
    const admission = new BoundedAdmission({ requests: 4, units: 100 });
    const whole = admitted(admission, 100);
    expect(admission.report()).toMatchObject({ depth: 1, units: 100, rejected: 0 });
    expect(refusal(admission, 1).reason).toBe('units');
    expect(refusal(admission, 100).reason).toBe('units');
    whole.release();
    const one = admitted(admission, 1);
    expect(refusal(admission, 100).reason).toBe('units');
    one.release();
    admitted(admission, 100).release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 3 });
  });

  it('admits a single-unit ceiling exactly', () => {
    const admission = new BoundedAdmission({ requests: 1, units: 1 });
    const p = admitted(admission, 1);
    expect(admission.report()).toMatchObject({ depth: 1, units: 1 });
    p.release();
    expect(refusal(admission, 2).reason).toBe('too-large');
  });

  it('is exact near Number.MAX_SAFE_INTEGER (checked, never rounded)', () => {
    const admission = new BoundedAdmission({ requests: 4, units: MAX });
    const big = admitted(admission, MAX - 1);
    expect(admission.report()).toMatchObject({ depth: 1, units: MAX - 1 });
    // (MAX - 1) + 2 = 2^53 + 0 would round to a "fitting" sum if added as doubles.
    expect(refusal(admission, 2).reason).toBe('units');
    expect(refusal(admission, MAX).reason).toBe('units');
    const last = admitted(admission, 1);
    expect(admission.report()).toMatchObject({ depth: 2, units: MAX, rejected: 2 });
    expect(refusal(admission, 1).reason).toBe('units');
    const zero = admitted(admission, 0);
    expect(admission.report()).toMatchObject({ depth: 3, units: MAX });
    for (const cost of [MAX + 1, 2 ** 53, 2 ** 53 + 2]) {
      expect(thrown(() => admission.tryAdmit(cost)).code).toBe('OMNI_ERR_INVALID_COST');
    }
    big.release();
    expect(admission.report()).toMatchObject({ depth: 2, units: 1 });
    const again = admitted(admission, MAX - 1);
    expect(admission.report()).toMatchObject({ depth: 3, units: MAX });
    for (const p of [again, last, zero]) p.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 3 });
    admitted(admission, MAX).release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 3 });
  });

  it('does no unit accounting in request-only mode', () => {
    const admission = new BoundedAdmission({ requests: 3 });
    const huge = admitted(admission, MAX);
    const zero = admitted(admission, 0);
    const small = admitted(admission, 7);
    expect([huge.units, zero.units, small.units]).toEqual([MAX, 0, 7]);
    expect(admission.report()).toMatchObject({ depth: 3, units: 0, unitCapacity: null, rejected: 0 });
    expect(refusal(admission, 0).reason).toBe('requests');
    huge.release();
    zero.release();
    small.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, unitCapacity: null, rejected: 1 });
  });

  const invalidCosts: unknown[] = [
    -1,
    -0.5,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    MAX + 1,
    2 ** 53,
    2 ** 60,
    '1',
    null,
    1n,
    {},
    true,
  ];

  describe.each([
    ['request-only', { requests: 2 }],
    ['with units', { requests: 2, units: 10 }],
    ['with wide units', { requests: 2, units: 2 ** 40 }],
  ])('invalid cost (%s)', (_mode, bounds) => {
    it.each(invalidCosts)('throws OMNI_ERR_INVALID_COST for %s and changes nothing', (cost) => {
      const admission = new BoundedAdmission(bounds);
      const held = [admitted(admission, 3), admitted(admission, 1)];
      expect(refusal(admission, 1).reason).toBe('requests');
      held.pop()?.release();
      const before = admission.report();
      expect(before).toMatchObject({ depth: 1, rejected: 1 });
      const err = thrown(() => admission.tryAdmit(cost as number));
      expect(err.code).toBe('OMNI_ERR_INVALID_COST');
      expect(err).toBeInstanceOf(RangeError);
      expect(admission.report()).toEqual(before);
      for (const p of held) p.release();
    });

    it('checks the cost before fullness or closing', async () => {
      const admission = new BoundedAdmission(bounds);
      const held = [admitted(admission, 1), admitted(admission, 1)];
      const before = admission.report();
      expect(thrown(() => admission.tryAdmit(-1)).code).toBe('OMNI_ERR_INVALID_COST');
      expect(admission.report()).toEqual(before);
      const drained = admission.close();
      expect(thrown(() => admission.tryAdmit(Number.NaN)).code).toBe('OMNI_ERR_INVALID_COST');
      expect(admission.report()).toEqual(before);
      for (const p of held) p.release();
      await drained;
    });
  });
});

describe('release', () => {
  describe.each(WORD_MODES)('%s', (_mode, units) => {
    const expectUnits = (n: number): number => (units === undefined ? 0 : n);

    it.each(['A then B', 'B then A'])('drops back to zero releasing %s', (order) => {
      const admission = new BoundedAdmission({ requests: 2, units });
      const a = admitted(admission, 3);
      expect(state(admission.report())).toEqual({ depth: 1, units: expectUnits(3), rejected: 0 });
      const b = admitted(admission, 4);
      expect(state(admission.report())).toEqual({ depth: 2, units: expectUnits(7), rejected: 0 });
      const [first, second] = order === 'A then B' ? [a, b] : [b, a];
      first.release();
      expect(first.released).toBe(true);
      expect(second.released).toBe(false);
      expect(state(admission.report())).toEqual({ depth: 1, units: expectUnits(second.units), rejected: 0 });
      second.release();
      expect(state(admission.report())).toEqual({ depth: 0, units: 0, rejected: 0 });
      // Released capacity is really free again.
      const c = admitted(admission, 3);
      const d = admitted(admission, 7);
      expect(state(admission.report())).toEqual({ depth: 2, units: expectUnits(10), rejected: 0 });
      d.release();
      c.release();
      expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 0, waiting: 0, leaked: 0 });
    });

    it('throws OMNI_ERR_PERMIT_RELEASED on a second release and changes nothing', () => {
      const admission = new BoundedAdmission({ requests: 2, units });
      const a = admitted(admission, 2);
      const b = admitted(admission, 3);
      a.release();
      const before = admission.report();
      expect(thrown(() => a.release()).code).toBe('OMNI_ERR_PERMIT_RELEASED');
      expect(thrown(() => a.release()).code).toBe('OMNI_ERR_PERMIT_RELEASED');
      expect(admission.report()).toEqual(before);
      expect(thrown(() => a.toClaim()).code).toBe('OMNI_ERR_PERMIT_RELEASED');
      expect(admission.report()).toEqual(before);
      b.release();
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
    });

    it('releases through Symbol.dispose once, and leaves a released permit alone', () => {
      const admission = new BoundedAdmission({ requests: 2, units });
      const a = admitted(admission, 2);
      a[Symbol.dispose]();
      expect(a.released).toBe(true);
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
      a[Symbol.dispose]();
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
      expect(thrown(() => a.release()).code).toBe('OMNI_ERR_PERMIT_RELEASED');
      const b = admitted(admission, 2);
      b.release();
      b[Symbol.dispose]();
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
    });

    it('works with `using`', () => {
      const admission = new BoundedAdmission({ requests: 2, units });
      {
        using permit = admitted(admission, 4);
        expect(permit.released).toBe(false);
        expect(admission.report()).toMatchObject({ depth: 1, units: expectUnits(4) });
        {
          using inner = admitted(admission, 5);
          expect(admission.report()).toMatchObject({ depth: 2, units: expectUnits(9) });
          inner.release(); // released early: the disposal at scope exit does nothing
        }
        expect(admission.report()).toMatchObject({ depth: 1, units: expectUnits(4) });
      }
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
      let escaped: Permit | undefined;
      expect(() => {
        using permit = admitted(admission, 1);
        escaped = permit;
        throw new Error('work failed');
      }).toThrow('work failed');
      expect(escaped?.released).toBe(true);
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
    });
  });
});

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
