/**
 * README claims about BoundedAdmission that no other test pins, one `it` each, the README's words
 * in its name.
 */
import { describe, expect, it } from 'vitest';
import { type AdmitOptions, BoundedAdmission } from '../src/index.js';

describe('README: BoundedAdmission', () => {
  it('"admit(cost = 1, ...)": admit() without a cost reserves one request and one unit', async () => {
    const admission = new BoundedAdmission({ requests: 2, units: 5 });
    const permit = await admission.admit();
    expect(permit.units).toBe(1);
    expect(admission.report()).toMatchObject({ depth: 1, units: 1 });
    permit.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
  });

  it('"Per-call options are not checked for unknown keys (admit()\'s)": a misspelt timeout is ignored', async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    const held = admission.tryAdmit();
    if (!held.ok) throw new Error('the empty admission refused');
    // `timeout` for `timeoutMs`: no timeout at all, so the call waits rather than timing out at once
    // (timeoutMs: 0) or being refused for its key (OMNI_ERR_INVALID_ARGUMENT).
    const waiting = admission.admit(1, { timeout: 0 } as AdmitOptions);
    expect(admission.report()).toMatchObject({ waiting: 1, rejected: 0 });
    held.release();
    const permit = await waiting;
    expect(permit.ok).toBe(true);
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 0 });
    permit.release();
    await admission.close();
  });
});
