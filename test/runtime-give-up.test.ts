/**
 * A handler that honours its signal stops and throws the signal's AbortError. That call ends the
 * way its caller sees it end, by its deadline (OMNI_ERR_DEADLINE, counted `deadline`) or its
 * abort, whichever thread's clock saw the deadline first; before, a worker that got there first
 * turned it into a failure (OMNI_ERR_TASK_FAILED named AbortError, counted `failed`).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Claim } from '../src/admission/index.js';
import { cancelledWord } from '../src/runtime/cancel-words.js';
import { WorkerTaskContext } from '../workers/task-context.js';
import { cleanupOnRealClock, codeOf, start } from './fixtures/runtime-harness.js';

afterEach(cleanupOnRealClock);

describe('a handler that gives up on ctx.signal', () => {
  it('past its deadline: every call is OMNI_ERR_DEADLINE and counted so, none failed', async () => {
    const rt = await start({ threads: 2, admission: { requests: 128 } });
    // Short deadlines, so that both threads' clocks race the main thread's on many calls.
    const calls = Array.from({ length: 120 }, (_, i) =>
      rt.run({ mode: 'give-up' }, { deadlineMs: 2 + (i % 7) }).then(
        () => 'resolved',
        (err: { code?: string }) => err.code,
      ),
    );
    const codes = await Promise.all(calls);
    expect(new Set(codes)).toEqual(new Set(['OMNI_ERR_DEADLINE']));
    expect(rt.report()).toMatchObject({ deadline: 120, failed: 0 });
  });

  it("past its deadline on the worker's clock alone: OMNI_ERR_DEADLINE and counted so, not failed", async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    // The main thread's deadline timer is faked and never made due: only the worker's clock runs,
    // so the worker's reply, not the main thread's timer, is what ends the call.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    expect(await codeOf(rt.run({ mode: 'give-up' }, { deadlineMs: 20 }))).toBe('OMNI_ERR_DEADLINE');
    vi.useRealTimers();
    expect(rt.report()).toMatchObject({ deadline: 1, failed: 0, depth: 0 });
  });

  // The abort settles the caller first, always: this guards that the worker's reply after it
  // (skipped, or given up) is not counted a second time, not the worker's clock race above.
  it('after its caller aborted: counted aborted once, never failed', async () => {
    const rt = await start({ threads: 1, admission: { requests: 4 } });
    const controller = new AbortController();
    const call = rt.run({ mode: 'give-up' }, { signal: controller.signal });
    controller.abort();
    await expect(call).rejects.toMatchObject({ code: 'OMNI_ERR_ABORTED' });
    await rt.close();
    expect(rt.report()).toMatchObject({ aborted: 1, failed: 0, depth: 0 });
  });
});

describe('WorkerTaskContext.stoppedBy', () => {
  const claim: Claim = { admission: 1, slot: 0, generation: 3, units: 0 };
  const abortError = (): Error => new DOMException('stopped', 'AbortError');

  it('an AbortError of a task nobody stopped is the handler’s own failure', () => {
    const ctx = new WorkerTaskContext(new Int32Array(1), claim, 1, 0);
    expect(ctx.stoppedBy(abortError())).toBeUndefined();
  });

  it('an AbortError once cancelled, or past the deadline, says which', () => {
    const words = new Int32Array(1);
    Atomics.store(words, 0, cancelledWord(claim));
    expect(new WorkerTaskContext(words, claim, 1, 0).stoppedBy(abortError())).toBe('aborted');
    const late = new WorkerTaskContext(new Int32Array(1), claim, 1, Date.now() - 1);
    expect(late.stoppedBy(abortError())).toBe('deadline');
    // The signal's own reason, read before the clock agrees: the deadline that aborted it.
    expect(late.signal.aborted).toBe(true);
    expect(late.stoppedBy(late.signal.reason)).toBe('deadline');
  });

  it('a signal its deadline timer aborted says deadline even before the clock reaches it', () => {
    // The timer is faked and made due while the real clock is still a minute short of the
    // deadline: what a timer firing a moment early looks like.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const words = new Int32Array(new SharedArrayBuffer(4));
    const ctx = new WorkerTaskContext(words, claim, 1, Date.now() + 60_000);
    const signal = ctx.signal;
    vi.advanceTimersByTime(60_000);
    expect(signal.aborted).toBe(true);
    expect(ctx.cancelled).toBe(false); // neither cancelled nor, by the clock, past its deadline
    expect(ctx.stoppedBy(signal.reason)).toBe('deadline');
    ctx.finish();
  });

  it('anything but an AbortError is a failure, cancelled or not', () => {
    const words = new Int32Array(1);
    Atomics.store(words, 0, cancelledWord(claim));
    const ctx = new WorkerTaskContext(words, claim, 1, Date.now() - 1);
    for (const err of [new Error('boom'), null, undefined, 'AbortError', { name: 'TypeError' }]) {
      expect(ctx.stoppedBy(err)).toBeUndefined();
    }
  });
});
