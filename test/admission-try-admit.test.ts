/**
 * tryAdmit: each refusal reason and its order, the frozen refusal objects, counting, cost 0 and
 * the default cost, exact sums near Number.MAX_SAFE_INTEGER, and the cost checks.
 */
import { describe, expect, it } from 'vitest';
import { BoundedAdmission } from '../src/index.js';
import { admitted, refusal, rejection, settles } from './fixtures/admission-interleave.js';
import { thrown } from './fixtures/thrown.js';

const MAX = Number.MAX_SAFE_INTEGER;

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

  // Each instance's first compare-exchange expects the word as that instance last left it. The
  // other instance (another thread's, or a claim released elsewhere) moves the word meanwhile.
  describe.each<[string, { requests: number; units?: number }, number, string]>([
    ['request-only', { requests: 2 }, 1, 'requests'],
    ['with units', { requests: 4, units: 10 }, 5, 'units'],
    ['with wide units', { requests: 4, units: 2 ** 40 }, 2 ** 39, 'units'],
  ])('an instance whose last view of the word is stale (%s)', (_mode, bounds, cost, full) => {
    it('one that saw the bound full still admits once another frees room', () => {
      const admission = new BoundedAdmission(bounds);
      const other = BoundedAdmission.attach(admission.buffer);
      const held = [admitted(admission, cost), admitted(admission, cost)];
      expect(refusal(admission, cost).reason).toBe(full);
      // Freed through the other instance: this one last saw the bound full.
      other.releaseClaim(held.pop()!.toClaim());
      const again = admitted(admission, cost);
      expect(admission.report()).toMatchObject({ depth: 2, rejected: 1 });
      for (const p of [...held, again]) p.release();
      expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
    });

    it('one that saw room the other has since taken refuses, and never admits past the bound', () => {
      const admission = new BoundedAdmission(bounds);
      const other = BoundedAdmission.attach(admission.buffer);
      const mine = admitted(admission, cost);
      mine.release(); // this instance last saw an empty word
      const theirs = [admitted(other, cost), admitted(other, cost)];
      expect(refusal(admission, cost).reason).toBe(full);
      expect(admission.report()).toMatchObject({ depth: 2, rejected: 1 });
      theirs.pop()!.release();
      const fits = admitted(admission, cost); // the word is not what either instance left
      expect(admission.report()).toMatchObject({ depth: 2 });
      for (const p of [...theirs, fits]) p.release();
      expect(other.report()).toMatchObject({ depth: 0, units: 0, rejected: 1 });
    });
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

    // Before any admission, too: the 64-bit word's hint starts out matching no cost.
    it.each(invalidCosts)('throws OMNI_ERR_INVALID_COST for %s as its first call', (cost) => {
      const admission = new BoundedAdmission(bounds);
      expect(thrown(() => admission.tryAdmit(cost as number)).code).toBe('OMNI_ERR_INVALID_COST');
      expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 0 });
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

/**
 * Issue 2: 'queued' means room exists but waiters are ahead. A bound that is full refuses as it
 * would without waiters ('requests' before 'units'), whether the waiter is another instance's
 * (the WAITING flag in the shared word) or this instance's own (its local queue).
 */
describe.each([
  ['the flag (another instance waits)', 'other'],
  ["this instance's own waiter", 'own'],
] as const)('refusal reasons with a waiter queued: %s', (_name, where) => {
  /**
   * Instances on one buffer, as threads would hold: `asker` refuses, `holder` holds and releases
   * (a release tries its own instance's heads at once, so the waiter is never there), the waiter
   * queues on `asker` itself or on a third instance.
   */
  function pair(bounds: { requests: number; units?: number }) {
    const asker = new BoundedAdmission(bounds);
    const holder = BoundedAdmission.attach(asker.buffer);
    return { asker, holder, waitOn: where === 'own' ? asker : BoundedAdmission.attach(asker.buffer) };
  }

  it("request-only: refuses 'requests' while full, 'queued' once room exists", async () => {
    const { asker, holder, waitOn } = pair({ requests: 2 });
    const held = [admitted(holder), admitted(holder)];
    const waiting = waitOn.admit();
    expect(asker.report().waiting).toBe(1);
    expect(refusal(asker).reason).toBe('requests');
    expect(refusal(asker, 0).reason).toBe('requests');
    held[0]!.release(); // room for one; the waiter's wake-up is still on its way
    expect(refusal(asker).reason).toBe('queued');
    expect(asker.report()).toMatchObject({ depth: 1, waiting: 1, rejected: 3 });
    const permit = await settles(waiting);
    permit.release();
    held[1]!.release();
    expect(asker.report()).toMatchObject({ depth: 0, waiting: 0, rejected: 3 });
  });

  it.each([
    ['narrow Int32 word', 10, 1],
    ['wide 64-bit word', 2 ** 40, 2 ** 40 - 9],
  ])(
    "units on the %s: 'requests', then 'units' or 'queued' by whether the cost fits",
    async (_w, ceiling, base) => {
      // ceiling = base + 9; the waiter wants 5, which does not fit beside ceiling - 2 held.
      const { asker, holder, waitOn } = pair({ requests: 2, units: ceiling });
      const big = admitted(holder, base + 7); // ceiling - 2 held
      const small = admitted(holder, 1); // requests full, ceiling - 1 held
      const waiting = waitOn.admit(5);
      expect(asker.report().waiting).toBe(1);
      expect(refusal(asker, 1).reason).toBe('requests'); // room on units, none on requests
      expect(refusal(asker, 2).reason).toBe('requests'); // neither: requests first
      small.release(); // a request free, ceiling - 2 units held; the waiter (5) still does not fit
      expect(refusal(asker, 3).reason).toBe('units');
      expect(refusal(asker, 2).reason).toBe('queued'); // exactly fits: room, but the waiter is ahead
      expect(refusal(asker, 0).reason).toBe('queued');
      expect(refusal(asker, ceiling + 1).reason).toBe('too-large');
      expect(asker.report()).toMatchObject({ depth: 1, waiting: 1, rejected: 6 });
      big.release();
      const permit = await settles(waiting);
      expect(asker.report()).toMatchObject({ depth: 1, units: 5, waiting: 0 });
      permit.release();
    },
  );

  // The first compare-exchange expects a word this instance saw (BoundedAdmission: #guess32,
  // #before64); here the counts come back to exactly that word, with a flag beside them.
  it.each([
    ['narrow Int32 word', 10],
    ['wide 64-bit word', 2 ** 40],
  ])('%s: the word as this instance last saw it does not pass a waiter or a close', async (_w, ceiling) => {
    const { asker, holder, waitOn } = pair({ requests: 2, units: ceiling });
    // Twice: the 64-bit word's guess is armed by a cost asked twice in a row.
    admitted(asker, 3).release();
    admitted(asker, 3).release(); // asker last saw the empty word, for a cost of 3
    const held = admitted(holder, ceiling);
    const waiting = waitOn.admit(3);
    held.release(); // the counts are empty again; the waiter's wake-up is still on its way
    expect(refusal(asker, 3).reason).toBe('queued');
    (await settles(waiting)).release();
    admitted(asker, 3).release(); // and the same again, before a close
    const drained = holder.close();
    expect(refusal(asker, 3).reason).toBe('closed');
    await drained;
    expect(asker.report()).toMatchObject({ depth: 0, units: 0, waiting: 0, rejected: 2 });
  });

  it("wide word, costs past the precomputed rooms (512 up): 'queued' exactly when the cost fits", async () => {
    const ceiling = 2 ** 40;
    const { asker, holder, waitOn } = pair({ requests: 3, units: ceiling });
    const held = admitted(holder, 1000);
    const waiting = waitOn.admit(ceiling); // fits only once empty
    expect(asker.report().waiting).toBe(1);
    expect(refusal(asker, ceiling - 1000).reason).toBe('queued'); // exactly fits beside 1000
    expect(refusal(asker, ceiling - 999).reason).toBe('units');
    held.release();
    const permit = await settles(waiting);
    expect(asker.report()).toMatchObject({ depth: 1, units: ceiling, waiting: 0 });
    permit.release();
  });

  it("keeps 'closed' first: a closed, full bound with a waiter refuses 'closed'", async () => {
    const { asker, holder, waitOn } = pair({ requests: 1, units: 10 });
    const held = admitted(holder, 10);
    const waiting = waitOn.admit(1);
    const drained = holder.close();
    expect(refusal(asker, 1).reason).toBe('closed');
    expect((await rejection(waiting)).code).toBe('OMNI_ERR_CLOSED');
    held.release();
    await drained;
  });
});

/**
 * A queue head reserves on a word that may carry WAITING (others still wait). That word is no
 * guess for its instance's next tryAdmit: released back to it, the word still shows the other
 * waiter, and a compare-exchange from it would take room past that waiter.
 */
describe.each([
  ['narrow Int32 word', 10],
  ['wide 64-bit word', 2 ** 40],
])('the word a queue head reserved on (%s)', (_w, ceiling) => {
  it("is not taken again past a waiter still queued on another instance: 'queued'", async () => {
    const admission = new BoundedAdmission({ requests: 2, units: ceiling });
    const other = BoundedAdmission.attach(admission.buffer);
    const mine = admitted(admission, 1);
    const theirs = admitted(other, 1); // requests full
    const head = admission.admit(1); // the same cost again, as arms the 64-bit word's guess
    const behind = other.admit(ceiling); // fits only once empty: stays queued
    mine.release(); // this instance's head reserves at once, on the word with WAITING set
    const permit = await settles(head);
    expect(admission.report()).toMatchObject({ depth: 2, units: 2, waiting: 1 });
    permit.release(); // back to the word the head reserved on, the other waiter still queued
    expect(refusal(admission, 1).reason).toBe('queued');
    theirs.release();
    (await settles(behind)).release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, waiting: 0, rejected: 1 });
  });
});
