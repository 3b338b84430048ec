/**
 * close()'s timeout and a call whose work ended before it: the worker released the call's claim
 * (its capacity is back) but the reply is still on its way, which piscina posts only once the
 * thread's stdout has drained, through this thread's event loop. The timeout abandons work still
 * running, not such a call: it is answered with its result, and close() counts it not abandoned.
 * The timeout fires on a fake clock (setTimeout only) at the moment under test.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { INVOKED, open, STARTED, waitFor } from './fixtures/runtime-control.js';
import {
  blockUntilDepth,
  cleanupOnRealClock,
  closePastRepliesWait,
  codeOf,
  control,
  gate,
  runtimeWarnings,
  start,
} from './fixtures/runtime-harness.js';

afterEach(cleanupOnRealClock);

const CLOSE_COUNT_WORKER = builtModuleUrl('test/fixtures/close-count-worker.js');

/** Lets close() run up to its next wait on another thread or a timer. */
async function microtasks(): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}

describe("close()'s timeout and a reply that trails its call's release", () => {
  // The clean path raced the wait for replies against the timeout, then terminated the thread:
  // the call rejected OMNI_ERR_TASK_FAILED ("Terminating worker thread") though close() said clean.
  it('after a clean drain: the call resolves with its result', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1 } });
    const call = rt.run({ mode: 'stdout-echo', value: 'done' });
    blockUntilDepth(rt, 0);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const closing = rt.close({ timeoutMs: 0 });
    await microtasks(); // the drain, heard at once, comes first
    vi.advanceTimersByTime(1); // then the timeout, with the reply still unheard
    vi.useRealTimers();
    await expect(call).resolves.toBe('done');
    expect(await closing).toEqual({ clean: true, abandoned: 0 });
    expect(rt.report()).toMatchObject({ depth: 0, completed: 1, failed: 0 });
  });

  // The forced path abandoned every call not yet answered: this one rejected
  // OMNI_ERR_WORKER_EXITED though its work had ended and close() counted one abandoned.
  it('beside a call still running: only the running one is abandoned', async () => {
    const rt = await start({ threads: 2, admission: { requests: 2 } });
    const stuck = control();
    const running = rt.run(gate(stuck, { sync: true }));
    const held = codeOf(running);
    await waitFor(stuck, STARTED, 1, running);
    const call = rt.run({ mode: 'stdout-echo', value: 'done' });
    blockUntilDepth(rt, 1);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const closing = rt.close({ timeoutMs: 0 });
    vi.advanceTimersByTime(1);
    vi.useRealTimers();
    await expect(call).resolves.toBe('done');
    expect(await held).toBe('OMNI_ERR_WORKER_EXITED');
    expect(await closing).toEqual({ clean: false, abandoned: 1 });
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, completed: 1, failed: 1 });
  });

  // A timeout given before the drain bounds the wait for work, not the hooks (docs/runtime.md, "Close
  // hooks and `startTimeoutMs`"). Left armed through the wait for the reply, it fired there and
  // settled the cut the hooks' round then took: the round ended at once ("did not finish before
  // close()'s timeout") and the thread was terminated, its hook not waited for.
  it('after a clean drain: the close hooks still run, and are waited for', async () => {
    const warnings = runtimeWarnings();
    const closed = control();
    const rt = await start({
      worker: CLOSE_COUNT_WORKER,
      threads: 1,
      admission: { requests: 1 },
      workerData: { closed: closed.buffer, closeGate: true },
    });
    const call = rt.run({ mode: 'stdout-echo', value: 'done' });
    blockUntilDepth(rt, 0);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const closing = rt.close({ timeoutMs: 0 });
    await microtasks();
    vi.advanceTimersByTime(1);
    vi.useRealTimers();
    await expect(call).resolves.toBe('done');
    await waitFor(closed, INVOKED, 1, closing);
    open(closed);
    expect(await closing).toEqual({ clean: true, abandoned: 0 });
    expect(Atomics.load(closed, STARTED)).toBe(1); // the hook ran to its end
    expect(warnings).toEqual([]);
  });

  // A reply that never comes (its thread stuck after the release; here this thread's loop held
  // past the bound on a fake clock) is waited for at most startTimeoutMs. The lapse was silent
  // and uncounted: its caller rejected as the thread stopped while close() said clean. It is now
  // cut off with a warning, and counted abandoned.
  it('a reply that does not come within startTimeoutMs: cut off, counted, and a warning says so', async () => {
    const warnings = runtimeWarnings();
    const rt = await start({ threads: 1, admission: { requests: 1 } });
    const call = codeOf(rt.run({ mode: 'stdout-echo', value: 'done' }));
    blockUntilDepth(rt, 0);
    const closing = closePastRepliesWait(rt);
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    expect(await closing).toEqual({ clean: false, abandoned: 1 });
    expect(warnings).toEqual([
      expect.stringContaining(
        'the replies of 1 call(s) whose work had ended did not come within startTimeoutMs',
      ),
    ]);
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, completed: 0, failed: 1 });
  });
});
