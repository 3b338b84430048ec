/**
 * A thread piscina starts on demand, not as a replacement (the scenario: on-demand-thread.ts).
 * Such a thread's start is bounded by startTimeoutMs as every other's: past it the runtime is
 * `failed`, the thread is terminated, and the call it held rejects, so no call waits, and no
 * close() hangs, for an init that never finishes. The runtime's timers run on a fake clock, made
 * due when the test says.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { onDemandThread } from './fixtures/on-demand-thread.js';
import { START_TIMEOUT_MS } from './fixtures/replacement-harness.js';
import { cleanupOnRealClock, until } from './fixtures/runtime-harness.js';

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
