/**
 * A thread piscina starts on demand, not as a replacement (the scenario: on-demand-thread.ts).
 * Such a thread's start is bounded by startTimeoutMs as every other's: past it the runtime is
 * `failed`, the thread is terminated, and the call it held rejects, so no call waits, and no
 * close() hangs, for an init that never finishes; unless that init is held in a native call,
 * which terminating cannot interrupt: then both wait for that call to return. The runtime's
 * timers run on a fake clock, made due when the test says.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { blockedInRead, canBlockInRead, HeldPipe } from './fixtures/blocked-in-read.js';
import { onDemandThread } from './fixtures/on-demand-thread.js';
import { START_TIMEOUT_MS } from './fixtures/replacement-harness.js';
import { cleanupOnRealClock, turns, until } from './fixtures/runtime-harness.js';

afterEach(cleanupOnRealClock);

/** The call held by a thread started on demand whose init never ends, still queued. */
async function callHeldByStuckThread() {
  const scenario = await onDemandThread('hold');
  expect(scenario.rt.report()).toMatchObject({ queued: 1, running: 0 });
  return scenario;
}

/** The stuck thread's startTimeoutMs passes; back to the real clock. */
function stuckThreadTimesOut(): void {
  try {
    vi.advanceTimersByTime(START_TIMEOUT_MS);
  } finally {
    vi.useRealTimers();
  }
}

describe('a thread piscina starts on demand whose init never finishes', () => {
  it('after the runtime failed: the call it took rejects, and close() returns', async () => {
    const { rt, second, settled } = await callHeldByStuckThread();
    stuckThreadTimesOut();
    // Bounded only to fail rather than hang: it settles once the thread's timeout has ended it.
    await until(settled, 'the call handed to the thread stuck in init to settle');
    expect(await second).toBe('OMNI_ERR_WORKER_EXITED');
    expect(rt.report()).toMatchObject({ depth: 0, queued: 0 });
    await expect(rt.close()).resolves.toMatchObject({ clean: true });
  });

  it('while close() (no timeout) drains: the call rejects and close() returns', async () => {
    const { rt, second } = await callHeldByStuckThread();
    let closed = false;
    const closing = rt.close().finally(() => {
      closed = true;
    });
    stuckThreadTimesOut();
    await until(() => closed, 'close() to return');
    await expect(closing).resolves.toMatchObject({ clean: true });
    expect(await second).toBe('OMNI_ERR_WORKER_EXITED');
    expect(rt.state).toBe('stopped');
  });
});

describe.skipIf(!canBlockInRead)(
  'a thread piscina starts on demand whose init is held in a native call',
  () => {
    // What docs/runtime.md's "Close hooks and startTimeoutMs" says of such a thread: past its bound it is
    // terminated, but stops only once the native call returns, and the call it took, close()'s
    // drain with it, waits for that.
    it('past its bound: the call it took rejects, and close() returns, once that native call has returned', async () => {
      const pipe = new HeldPipe();
      try {
        const { rt, second, settled } = await onDemandThread('read', pipe.readEnd);
        // Polled by turns of the loop: until() waits on setTimeout, which is faked here.
        while (!blockedInRead(pipe.readEnd)) await turns(1);
        stuckThreadTimesOut();
        let closed = false;
        const closing = rt.close().finally(() => {
          closed = true;
        });
        await until(() => rt.state === 'draining', 'close() to begin');
        await turns();
        expect(blockedInRead(pipe.readEnd)).toBe(true);
        expect({ settled: settled(), closed }).toEqual({ settled: false, closed: false });
        pipe.release();
        await until(settled, 'the call handed to the held thread to settle');
        expect(await second).toBe('OMNI_ERR_WORKER_EXITED');
        await expect(closing).resolves.toMatchObject({ clean: true });
      } finally {
        pipe.release();
        await cleanupOnRealClock();
        pipe.close();
      }
    });
  },
);
