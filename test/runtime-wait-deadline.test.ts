/**
 * In wait mode a call's deadline runs from run(): the time it spent waiting for admission counts.
 * Checked by the order of two timers in this thread, never by a measured duration.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, codeOf, control, gate, start, until } from './fixtures/runtime-harness.js';

afterEach(cleanup);

describe('deadline of a call that waited for admission', () => {
  it('fires at run() + deadlineMs, not at dispatch + deadlineMs', async () => {
    const DEADLINE_MS = 1_000;
    const WAIT_MS = 400;
    const rt = await start({ threads: 2, admission: { requests: 1, wait: true } });
    const a = control();
    const b = control();
    const first = rt.run(gate(a, { value: 'a' }));
    await waitFor(a, STARTED, 1, first);
    const order: string[] = [];
    const second = codeOf(rt.run(gate(b), { deadlineMs: DEADLINE_MS })).then((code) => {
      order.push(String(code));
    });
    // Created after run(), so due after its deadline; a deadline restarted at dispatch (at least
    // WAIT_MS later) would be due after this one. Timers fire in due order.
    setTimeout(() => order.push('reference'), DEADLINE_MS + WAIT_MS / 2);
    // Only lets the clock advance before the slot frees; no thread is ordered by it.
    await new Promise((resolve) => setTimeout(resolve, WAIT_MS));
    open(a);
    await expect(first).resolves.toBe('a');
    await second;
    await until(() => order.length === 2, 'the reference timer');
    expect(order).toEqual(['OMNI_ERR_DEADLINE', 'reference']);
    open(b);
  });
});
