/**
 * Runtime.start()'s option checks at their documented limits, on both sides of
 * each: the largest value allowed passes, the next one is refused with its code. Checked
 * without starting threads (checkRuntimeOptions is what start() calls first).
 */
import { describe, expect, it } from 'vitest';
import { MAX_CLAIM_SLOTS } from '../src/admission/layout.js';
import { checkRuntimeOptions, type RuntimeOptions } from '../src/runtime/options.js';

const worker = '/nowhere/worker.js';

function codeOfCheck(options: RuntimeOptions): string | undefined {
  try {
    checkRuntimeOptions(options);
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code;
  }
}

describe('checkRuntimeOptions at its limits', () => {
  it('threads: 256 passes, 257 is OMNI_ERR_INVALID_ARGUMENT', () => {
    expect(checkRuntimeOptions({ worker, threads: 256 }).threads).toBe(256);
    expect(codeOfCheck({ worker, threads: 257 })).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  // Only undefined takes the default, as for every other option (a null inFeatures, seed or
  // device is refused): null ran one thread.
  it('threads: null is OMNI_ERR_INVALID_ARGUMENT, not the default 1', () => {
    expect(codeOfCheck({ worker, threads: null as unknown as number })).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  it('idleTimeout: the longest setTimeout (2^31 - 1 ms) passes, one more is refused', () => {
    expect(checkRuntimeOptions({ worker, idleTimeout: 2 ** 31 - 1 }).idleTimeout).toBe(2 ** 31 - 1);
    expect(codeOfCheck({ worker, idleTimeout: 2 ** 31 })).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  it('admission.requests: one per claim slot passes, one more is OMNI_ERR_INVALID_BOUND', () => {
    const checked = checkRuntimeOptions({ worker, admission: { requests: MAX_CLAIM_SLOTS } });
    expect(checked.admission?.requests).toBe(MAX_CLAIM_SLOTS);
    expect(codeOfCheck({ worker, admission: { requests: MAX_CLAIM_SLOTS + 1 } })).toBe(
      'OMNI_ERR_INVALID_BOUND',
    );
  });

  // An array has no limit keys to refuse: taken for an object, it lifted every limit silently.
  it('resourceLimits given as an array: OMNI_ERR_INVALID_ARGUMENT', () => {
    expect(codeOfCheck({ worker, resourceLimits: [] as never })).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  // new URL() of it threw Node's own TypeError (ERR_INVALID_URL), not the option's code.
  it('a worker URL with a scheme and authority that does not parse: OMNI_ERR_INVALID_ARGUMENT', () => {
    expect(codeOfCheck({ worker: 'http://[::1/worker.js' })).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });
});
