/**
 * Every reply a worker sends comes after it released the call's claim (workers/entry.ts, in the
 * finally around the handler), so the main thread's reclaim when the reply arrives finds the
 * claim spent. That reclaim is kept as the backstop should a reply ever come without the
 * release (~30 ns a call: bench/claim-reclaim.bench.ts); this holds the worker to releasing
 * first, which the backstop would otherwise hide.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BoundedAdmission } from '../src/index.js';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, codeOf, control, gate, start, until } from './fixtures/runtime-harness.js';

afterEach(async () => {
  vi.restoreAllMocks();
  await cleanup();
});

describe('a reply', () => {
  it('comes after the worker released its claim, whatever the reply says', async () => {
    const rt = await start({ threads: 1, admission: { requests: 3 } });
    const reclaims = vi.spyOn(BoundedAdmission.prototype, 'reclaim');
    // A value, a handler's error, a result that cannot be posted back, and a task skipped
    // because its caller aborted while it was queued (behind a gated one, also a value).
    await expect(rt.run({ mode: 'echo', value: 1 })).resolves.toBe(1);
    expect(await codeOf(rt.run({ mode: 'throw-coded', code: 'X_CODED' }))).toBe('X_CODED');
    expect(await codeOf(rt.run({ mode: 'unsendable', value: 1 }))).toBe('OMNI_ERR_TASK_FAILED');
    const first = control();
    const running = rt.run(gate(first, { value: 'first' }));
    await waitFor(first, STARTED);
    const ac = new AbortController();
    const skipped = rt.run({ mode: 'echo', value: 2 }, { signal: ac.signal });
    ac.abort();
    expect(await codeOf(skipped)).toBe('OMNI_ERR_ABORTED');
    open(first);
    await expect(running).resolves.toBe('first');
    await until(() => reclaims.mock.calls.length === 5, 'the five replies');
    expect(reclaims.mock.results).toEqual(Array(5).fill({ type: 'return', value: false }));
    expect(rt.report()).toMatchObject({ depth: 0, completed: 2, failed: 2, aborted: 1 });
  });
});
