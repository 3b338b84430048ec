/**
 * report().leaked is kept in 64 bits, as `rejected` is: a process that leaks permits for long
 * enough (an admission shared by a long-lived server) must not see the count wrap negative at
 * 2^31 or back to 0 at 2^32. The counter is preset through the shared buffer, where every
 * attached instance reads it, and one real leak is then reclaimed by the safety net.
 * vitest.config.ts starts the test processes with --expose-gc.
 */
import { describe, expect, it } from 'vitest';
import { LEAKED_U64 } from '../src/admission/layout.js';
import { BoundedAdmission } from '../src/index.js';
import { WORD_MODES } from './fixtures/admission-interleave.js';
import { collectUntil } from './fixtures/collect-until.js';

/** An instance attached for one task that admits one request and drops the permit and itself. */
function dropWithInstance(buffer: SharedArrayBuffer): void {
  const result = BoundedAdmission.attach(buffer).tryAdmit(1);
  if (!result.ok) throw new Error(`expected an admission, refused: ${result.reason}`);
}

describe.each(WORD_MODES)('report().leaked past 32 bits (%s)', (_mode, units) => {
  it.each([
    ['2^31 - 1 (an Int32 wrapped to -2^31)', 2 ** 31 - 1],
    ['2^32 - 1 (a Uint32 wrapped to 0)', 2 ** 32 - 1],
    ['2^53 - 2', 2 ** 53 - 2],
  ])('from %s, one more reclaimed permit counts exactly', async (_what, preset) => {
    const owner = new BoundedAdmission({ requests: 2, units });
    new BigUint64Array(owner.buffer, 0, 8)[LEAKED_U64] = BigInt(preset);
    expect(owner.report().leaked).toBe(preset);
    dropWithInstance(owner.buffer);
    await collectUntil(() => owner.report().depth === 0);
    expect(owner.report()).toMatchObject({ depth: 0, leaked: preset + 1 });
    // Another instance on the same buffer reads the same count.
    expect(BoundedAdmission.attach(owner.buffer).report().leaked).toBe(preset + 1);
  });
});
