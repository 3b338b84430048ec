/**
 * report().rejected is 64-bit-safe (DESIGN.md, admission invariant 8): a long-lived admission
 * that refuses a burst now and then must not see the count wrap negative at 2^31 or back to 0
 * at 2^32. 2^32 real refusals take minutes, so the counter is preset through the shared buffer,
 * where every attached instance reads it, and then real refusals of each kind are counted on it.
 */
import { describe, expect, it } from 'vitest';
import { REJECTED_U64 } from '../src/admission/layout.js';
import { BoundedAdmission } from '../src/index.js';
import { admitted, refusal, rejection, WORD_MODES } from './fixtures/admission-interleave.js';

describe.each(WORD_MODES)('report().rejected past 32 bits (%s)', (_mode, units) => {
  it.each([
    ['2^31 - 1 (an Int32 wrapped to -2^31)', 2 ** 31 - 1],
    ['2^32 - 1 (a Uint32 wrapped to 0)', 2 ** 32 - 1],
    ['2^53 - 4', 2 ** 53 - 4],
  ])('from %s, each further refusal counts exactly, on every instance', async (_what, preset) => {
    const owner = new BoundedAdmission({ requests: 1, units });
    new BigUint64Array(owner.buffer, 0, 8)[REJECTED_U64] = BigInt(preset);
    expect(owner.report().rejected).toBe(preset);
    const held = admitted(owner, 1);
    expect(owner.report().rejected).toBe(preset); // accepted work is never counted
    expect(refusal(owner, 1).reason).toBe('requests');
    const other = BoundedAdmission.attach(owner.buffer);
    expect((await rejection(other.admit(1, { timeoutMs: 0 }))).code).toBe('OMNI_ERR_TIMEOUT');
    expect(owner.report().rejected).toBe(preset + 2);
    if (units !== undefined) {
      expect(refusal(owner, units + 1).reason).toBe('too-large');
      expect(owner.report().rejected).toBe(preset + 3);
    }
    held.release();
    const counted = preset + (units === undefined ? 2 : 3);
    expect(other.report()).toMatchObject({ depth: 0, rejected: counted });
  });
});
