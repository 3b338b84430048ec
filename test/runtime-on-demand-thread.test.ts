/**
 * A thread piscina starts on demand, not as a replacement: once a replacement has ended in its
 * init, piscina replaces no lost thread, but starts one for a queued call whenever the pool is
 * short, and hands a queued call to a thread still in its init. Such a thread's start is bounded
 * by startTimeoutMs as every other's: past it the runtime is `failed`, the thread is terminated,
 * and the call it held rejects, so no call waits, and no close() hangs, for an init that never
 * finishes. Threads are ordered by shared words, threadEnds and the runtime's own promises; the
 * runtime's timers run on a fake clock, made due when the test says.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ThreadEnds } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { START_TIMEOUT_MS } from './fixtures/replacement-harness.js';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanupOnRealClock, codeOf, control, gate, start, until } from './fixtures/runtime-harness.js';
import { COUNT, FIRST, newIds } from './fixtures/thread-exit-worker.js';

afterEach(cleanupOnRealClock);

const WORKER = builtModuleUrl('test/fixtures/thread-exit-worker.js');

/** Resolves `exit(id)` once thread `id` is reported exited. */
function exits() {
  const gone = new Set<number>();
  const waiting = new Map<number, () => void>();
  const ends: ThreadEnds = {
    exited(threadId) {
      gone.add(threadId);
      waiting.get(threadId)?.();
    },
    stopped() {},
  };
  const exit = (threadId: number): Promise<void> =>
    gone.has(threadId) ? Promise.resolve() : new Promise((resolve) => waiting.set(threadId, resolve));
  return { ends, exit };
}

/**
 * Two threads; one is lost and its replacement ends in its init, and the runtime fails for it
 * (its startTimeoutMs), one thread still serving. That thread then takes one queued call, and
 * piscina starts a thread for the other and hands it that call while the thread is in its init,
 * which never ends. Returns with setTimeout faked, that thread's timeout not yet due.
 */
async function callHeldByStuckThread() {
  const { ends, exit } = exits();
  const ids = newIds();
  const rt = await start({
    worker: WORKER,
    threads: 2,
    admission: { requests: 4 },
    startTimeoutMs: START_TIMEOUT_MS,
    threadEnds: ends,
    // The third init (the lost thread's replacement) ends its thread; the fourth never ends.
    workerData: { ids: ids.buffer, exitAt: 3, holdAt: 4 },
  });
  const dying = control();
  const held = control();
  const died = codeOf(rt.run({ mode: 'block-exit', control: dying.buffer as SharedArrayBuffer }));
  const served = rt.run({ ...gate(held, { sync: true }), value: 0 });
  await waitFor(dying, STARTED);
  await waitFor(held, STARTED);
  // Both threads busy: these two wait in piscina's queue.
  const [first, second] = [rt.run({ mode: 'echo', value: 1 }), rt.run({ mode: 'echo', value: 2 })];
  let settled = false;
  const stuckCall = codeOf(second!).finally(() => {
    settled = true;
  });
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  open(dying);
  expect(await died).toBe('OMNI_ERR_WORKER_EXITED');
  // The replacement ends in its init: piscina replaces no thread from here on (it has handled
  // that exit before threadEnds hears of it).
  await waitFor(ids, COUNT, 3);
  await exit(Atomics.load(ids, FIRST + 2));
  // The lost thread was never replaced: the runtime fails, one thread still serving.
  vi.advanceTimersByTime(START_TIMEOUT_MS);
  expect(await rt.whenFailed()).toHaveProperty('code', 'OMNI_ERR_WORKER_EXITED');
  expect(rt.state).toBe('failed');
  open(held);
  expect(await served).toBe(0);
  expect(await first).toBe(1);
  await waitFor(ids, COUNT, 4);
  expect(rt.report()).toMatchObject({ queued: 1, running: 0 });
  return { rt, stuckCall, settled: () => settled };
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
    const { rt, stuckCall, settled } = await callHeldByStuckThread();
    stuckThreadTimesOut();
    // Bounded only to fail rather than hang: it settles once the thread's timeout has ended it.
    await until(settled, 'the call handed to the thread stuck in init to settle');
    expect(await stuckCall).toBe('OMNI_ERR_WORKER_EXITED');
    expect(rt.report()).toMatchObject({ depth: 0, queued: 0 });
    await expect(rt.close()).resolves.toMatchObject({ clean: true });
  });

  it('while close() (no timeout) drains: the call rejects and close() returns', async () => {
    const { rt, stuckCall } = await callHeldByStuckThread();
    let closed = false;
    const closing = rt.close().finally(() => {
      closed = true;
    });
    stuckThreadTimesOut();
    await until(() => closed, 'close() to return');
    await expect(closing).resolves.toMatchObject({ clean: true });
    expect(await stuckCall).toBe('OMNI_ERR_WORKER_EXITED');
    expect(rt.state).toBe('stopped');
  });
});
