/**
 * Every worker thread the process starts is told to every runtime (thread-starts.ts), and each
 * runtime bounds by its startTimeoutMs only the threads of its own pool (replacement-watch.ts):
 * a thread of the caller's own, or another runtime's, that never comes up is no thread of this
 * runtime's, and must not fail it. The runtime's timers run on a fake clock, made due when the
 * test says; threads are ordered by shared words.
 */
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { START_TIMEOUT_MS } from './fixtures/replacement-harness.js';
import { INVOKED, newControl, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanupOnRealClock, codeOf, control, gate, start } from './fixtures/runtime-harness.js';
import { newIds } from './fixtures/thread-exit-worker.js';

const HANG_INIT_WORKER = builtModuleUrl('test/fixtures/runtime-hang-init-worker.js');

const own: Worker[] = [];

afterEach(async () => {
  await Promise.all(own.splice(0).map((worker) => worker.terminate()));
  await cleanupOnRealClock();
});

describe("threads that are not this runtime's", () => {
  // Mutant: a start bound for any thread the process starts (no look at the pool's threads in
  // replacement-watch.ts, at the event and at the due time): either thread failed this runtime.
  it("the caller's own thread, and another runtime's replacement, never up: this runtime serves on", async () => {
    const rt = await start({ threads: 1, startTimeoutMs: START_TIMEOUT_MS });
    const other = newControl();
    const stuck = await start({
      worker: HANG_INIT_WORKER,
      threads: 1,
      startTimeoutMs: START_TIMEOUT_MS,
      workerData: { control: other.buffer, hangAt: 2 },
    });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    // A thread of the caller's own, blocked for good: it is in no runtime's pool.
    const blocked = new Worker('Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)', {
      eval: true,
    });
    own.push(blocked);
    await once(blocked, 'online');
    // The other runtime loses its thread; its replacement stays in its init for good.
    expect(await codeOf(stuck.run({ exit: true }))).toBe('OMNI_ERR_WORKER_EXITED');
    await waitFor(other, INVOKED, 2);
    vi.advanceTimersByTime(START_TIMEOUT_MS);
    vi.useRealTimers();
    // The other runtime's own bound is what fails it; this one is untouched.
    expect(await stuck.whenFailed()).toHaveProperty('code', 'OMNI_ERR_WORKER_EXITED');
    expect(rt.state).toBe('ready');
    expect(rt.failure).toBeUndefined();
    await expect(rt.run({ mode: 'echo', value: 1 })).resolves.toBe(1);
  });
});

describe('a runtime done with its threads leaves no listener on process', () => {
  const ends = { exited() {}, stopped() {} };
  const worker = builtModuleUrl('test/fixtures/thread-exit-worker.js');

  // Mutant: threadEnds' exit watch never stops hearing of thread starts (pool.ts's destroyPool):
  // every runtime given threadEnds left its 'worker' listener on process, and its pool with it.
  it('closed, or its start failed, with threadEnds', async () => {
    const before = process.listenerCount('worker');
    const rt = await start({ worker, threads: 2, threadEnds: ends, workerData: { ids: newIds().buffer } });
    expect(process.listenerCount('worker')).toBeGreaterThan(before);
    await rt.close();
    expect(process.listenerCount('worker')).toBe(before);
    const failed = start({
      worker,
      threads: 2,
      threadEnds: ends,
      workerData: { ids: newIds().buffer, failAt: 1 },
    });
    expect(await codeOf(failed)).toBe('X_INIT');
    expect(process.listenerCount('worker')).toBe(before);
  });

  // The other two ways destroyPool is reached: a failed runtime's abandoned pool (before close()),
  // and close()'s timeout with a call still running.
  it('failed with no thread left, or closed by its timeout, with threadEnds', async () => {
    const before = process.listenerCount('worker');
    const lost = await start({
      worker,
      threads: 1,
      threadEnds: ends,
      workerData: { ids: newIds().buffer, exitAt: 2 },
    });
    expect(await codeOf(lost.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
    expect(await lost.whenFailed()).toHaveProperty('code', 'OMNI_ERR_WORKER_EXITED');
    expect(process.listenerCount('worker')).toBe(before);
    await lost.close();
    expect(process.listenerCount('worker')).toBe(before);
    const rt = await start({ worker, threads: 2, threadEnds: ends, workerData: { ids: newIds().buffer } });
    const stuck = control();
    const running = rt.run(gate(stuck, { sync: true }));
    const call = codeOf(running);
    await waitFor(stuck, STARTED, 1, running);
    expect(await rt.close({ timeoutMs: 0 })).toEqual({ clean: false, abandoned: 1 });
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    expect(process.listenerCount('worker')).toBe(before);
  });
});
