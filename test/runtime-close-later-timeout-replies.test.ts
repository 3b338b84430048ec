/**
 * A close timeout given while close() waits for the replies of calls whose work has ended (their
 * threads stuck after the release) cuts that wait short, as it cuts the close hooks' rounds: the
 * caller asked for an end now (a server's next signal). That wait held for startTimeoutMs
 * whatever came later, and with `startTimeoutMs: Infinity` for good. Those calls are cut off,
 * counted in `abandoned`, with no startTimeoutMs warning (the lapse was asked for); every close()
 * returns the first one's promise, whose result says so.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { STARTED, waitFor } from './fixtures/runtime-control.js';
import {
  cleanup,
  codeOf,
  control,
  gate,
  runStuckAfterRelease,
  runtimeWarnings,
  settledWhenAsked,
  start,
  until,
} from './fixtures/runtime-harness.js';

afterEach(cleanup);

/** Lets close() run up to its next wait on another thread or a timer. */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}

describe('a later close timeout and the wait for trailing replies', () => {
  it('after a clean drain: close({ timeoutMs: 0 }) cuts the reply off at once', async () => {
    const warnings = runtimeWarnings();
    const rt = await start({ threads: 1, admission: { requests: 1 }, startTimeoutMs: Infinity });
    const call = codeOf(runStuckAfterRelease(rt, 0));
    const closing = rt.close();
    await microtasks(); // the drain, heard at once: close() now waits for the reply
    expect(rt.close({ timeoutMs: 0 })).toBe(closing);
    const settled = settledWhenAsked(call);
    await until(settled, 'the call cut off');
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    expect(await closing).toEqual({ clean: false, abandoned: 1 });
    expect(warnings).toEqual([]);
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, completed: 0, failed: 1 });
  });

  // The first timeout, disarmed as the drain was heard, no longer applies: one given later is not
  // taken for a later one than it, and so ignored (a close timeout never postpones the cut).
  it('after a clean drain within a 0 ms close timeout: a second one still cuts the reply off', async () => {
    const warnings = runtimeWarnings();
    const rt = await start({ threads: 1, admission: { requests: 1 }, startTimeoutMs: Infinity });
    const call = codeOf(runStuckAfterRelease(rt, 0));
    // Drained already: heard on this turn's microtasks, before the 0 ms timer could fire.
    const closing = rt.close({ timeoutMs: 0 });
    await microtasks();
    expect(rt.close({ timeoutMs: 0 })).toBe(closing);
    const settled = settledWhenAsked(call);
    await until(settled, 'the call cut off');
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    expect(await closing).toEqual({ clean: false, abandoned: 1 });
    expect(warnings).toEqual([]);
  });

  it("after a timeout cut the work off: the next close timeout cuts the reply's wait", async () => {
    const warnings = runtimeWarnings();
    const rt = await start({ threads: 2, admission: { requests: 2 }, startTimeoutMs: Infinity });
    const running = control();
    const heldCall = rt.run(gate(running, { sync: true }));
    const held = codeOf(heldCall);
    await waitFor(running, STARTED, 1, heldCall);
    const call = codeOf(runStuckAfterRelease(rt, 1));
    const closing = rt.close({ timeoutMs: 0 });
    // Abandoned as the timeout fired: close() now waits for the other call's reply.
    expect(await held).toBe('OMNI_ERR_WORKER_EXITED');
    await microtasks();
    expect(rt.close({ timeoutMs: 0 })).toBe(closing);
    const settled = settledWhenAsked(call);
    await until(settled, 'the call cut off');
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    expect(await closing).toEqual({ clean: false, abandoned: 2 });
    expect(warnings).toEqual([]);
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, completed: 0, failed: 2 });
  });
});
