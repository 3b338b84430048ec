/**
 * start() is bounded by startTimeoutMs even when a thread's init never settles: that thread never
 * takes its start-up ping, so only the main thread's own timer can end the wait.
 */
import { describe, expect, it, vi } from 'vitest';
import { Runtime } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { INVOKED, newControl, waitFor } from './fixtures/runtime-control.js';

describe('startTimeoutMs', () => {
  it('a thread whose init never finishes: start() rejects OMNI_ERR_WORKER_EXITED', async () => {
    const control = newControl();
    const started = Runtime.start({
      worker: builtModuleUrl('test/fixtures/runtime-hang-init-worker.js'),
      threads: 2,
      startTimeoutMs: 300,
      workerData: { control: control.buffer, hangAt: 2 },
    });
    // On the unfixed code this never settles and the test times out.
    await expect(started).rejects.toMatchObject({ code: 'OMNI_ERR_WORKER_EXITED' });
  });

  it('once it has passed, start() rejects without waiting it out a second time to close the others', async () => {
    const control = newControl();
    // Faked only until the start's own timeout is made due: nothing after that may wait for time.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let outcome: Promise<unknown> = Promise.resolve('not started');
    try {
      const started = Runtime.start({
        worker: builtModuleUrl('test/fixtures/runtime-hang-init-worker.js'),
        threads: 2,
        startTimeoutMs: 600_000,
        workerData: { control: control.buffer, hangAt: 2 },
      });
      outcome = started.then(
        () => 'started',
        (err: { code?: string }) => err.code,
      );
      await waitFor(control, INVOKED, 2); // the second thread's init has begun, and never ends
      vi.advanceTimersByTime(600_000);
    } finally {
      vi.useRealTimers();
    }
    // On the unfixed code the start waits another 600 s for an answer that cannot come.
    expect(await outcome).toBe('OMNI_ERR_WORKER_EXITED');
  });
});
