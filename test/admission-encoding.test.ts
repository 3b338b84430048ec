/**
 * The state word's encoding at its edges: the wide word's precomputed deltas (costs below 512)
 * and the costs past them, the narrow/wide choice at exactly 29 bits, and the claim slots: the cap
 * the README documents (65,536, written out here rather than taken from the constant) and the
 * wrap of the search for a free one.
 */
import { describe, expect, it } from 'vitest';
import { CLOSED_BIT_32 } from '../src/admission/layout.js';
import { BoundedAdmission } from '../src/index.js';
import { admitted, withOtherThread } from './fixtures/admission-interleave.js';

describe('wide word around the precomputed delta cache (512 costs)', () => {
  it.each([0, 1, 510, 511, 512, 513])('admits, releases and reclaims cost %i exactly', (cost) => {
    const admission = new BoundedAdmission({ requests: 4, units: 2 ** 40 });
    const permit = admitted(admission, cost);
    expect(admission.report()).toMatchObject({ depth: 1, units: cost });
    permit.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
    const claim = admitted(admission, cost).toClaim();
    admission.releaseClaim(claim);
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 0 });
  });
});

describe('bounds at the narrow/wide word boundary', () => {
  it.each([
    [2 ** 10 - 1, 2 ** 19 - 1], // 29 bits: narrow, every field bit used
    [2 ** 10, 2 ** 19 - 1], // 30 bits: must be wide
    [1, 2 ** 28 - 1], // 29 bits
    [1, 2 ** 29 - 1], // 30 bits
  ])('fills and empties exactly: requests %i, units %i', (requests, units) => {
    const admission = new BoundedAdmission({ requests, units });
    const permits = [admitted(admission, units)];
    for (let i = 1; i < requests; i++) permits.push(admitted(admission, 0));
    expect(admission.report()).toMatchObject({ depth: requests, units, waiting: 0 });
    expect(admission.tryAdmit(0)).toEqual({ ok: false, reason: 'requests' });
    for (const permit of permits) permit.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, rejected: 1 });
    admitted(admission, units).release();
  });

  // Kills: bounds.ts choosing the wide word at `bits >= 29`: every behaviour stays the same, but
  // the hot path then works in BigInt. Both words keep the fields in their low 29 bits; where
  // close() puts its flag shows which one is in use (bit 30 of the Int32 word, bit 63 otherwise).
  it.each([
    [2 ** 10 - 1, 2 ** 19 - 1, true],
    [2 ** 10, 2 ** 19 - 1, false],
  ])('requests %i with units %i keep the Int32 word: %s', async (requests, units, narrow) => {
    const admission = new BoundedAdmission({ requests, units });
    await admission.close();
    expect(new Int32Array(admission.buffer, 0, 2)[0]).toBe(narrow ? CLOSED_BIT_32 : 0);
  });
});

describe('claim slot cap', () => {
  it('allows the documented 65,536 outstanding claims, and no more', () => {
    const admission = new BoundedAdmission({ requests: 70_000 });
    const claims = [];
    for (let i = 0; i < 65_536; i++) claims.push(admitted(admission, 1).toClaim());
    const extra = admitted(admission, 1);
    let code: string | undefined;
    try {
      extra.toClaim();
    } catch (err) {
      code = (err as { code?: string }).code;
    }
    expect(code).toBe('OMNI_ERR_CLAIMS_EXHAUSTED');
    extra.release();
    for (const claim of claims) admission.releaseClaim(claim);
    expect(admission.report()).toMatchObject({ depth: 0 });
  });
  // Kills: admission-buffer.ts isAdmissionBuffer with `slots < MAX_CLAIM_SLOTS`: an admission
  // with the documented 65,536 slots could not be attached.
  it('attaches to an admission that has all 65,536 slots', () => {
    const { admission, otherThread } = withOtherThread({ requests: 70_000 });
    otherThread.releaseClaim(admitted(admission, 1).toClaim());
    expect(admission.report()).toMatchObject({ depth: 0 });
  });

  // Kills: claims.ts acquire() wrapping its search with `slot > n` instead of `>=` (it then reads
  // past the last slot); only the stress test noticed.
  it('wraps its search for a free slot past the last slot', () => {
    const admission = new BoundedAdmission({ requests: 3 });
    const claim = () => admitted(admission, 1).toClaim();
    const [a, b, c] = [claim(), claim(), claim()];
    expect([a.slot, b.slot, c.slot]).toEqual([0, 1, 2]);
    admission.releaseClaim(a);
    admission.releaseClaim(b);
    const d = claim(); // slot 0
    const e = claim(); // slot 1: the next search starts at slot 2, which c holds
    admission.releaseClaim(d);
    expect(claim().slot).toBe(0);
    for (const held of [c, e]) admission.releaseClaim(held);
  });
});
