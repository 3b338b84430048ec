/**
 * start() is bounded by startTimeoutMs even when a thread's init never settles: that thread never
 * takes its start-up ping, so only the main thread's own timer can end the wait. One held in a
 * native call cannot be terminated either: start() does not wait past that bound for its exit.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Runtime } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { canBlockInRead, HeldPipe } from './fixtures/blocked-in-read.js';
import { watchCreated } from './fixtures/created-workers.js';
import {
  endHeldStart,
  expectEndsAtExit,
  expectGaveUpWhileHeld,
  HELD_START_TIMEOUT_MS,
  heldBlockingStart,
} from './fixtures/held-init-start.js';
import { INVOKED, newControl, waitFor } from './fixtures/runtime-control.js';
import { recorder } from './fixtures/thread-ends-recorder.js';

afterEach(() => {
  vi.restoreAllMocks();
});

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

  it.skipIf(!canBlockInRead)(
    'a thread whose init is held in a native call: start() rejects past the bound for its exit, threadEnds hears of it at its exit',
    async () => {
      const pipe = new HeldPipe();
      // start() gives up waiting for the held thread's exit: expected here.
      const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
      const created = watchCreated();
      const listening = process.listenerCount('worker');
      const { log, ends } = recorder();
      const held = heldBlockingStart(pipe, ends);
      try {
        expectGaveUpWhileHeld(await held.givenUp(), pipe, warning, HELD_START_TIMEOUT_MS);
        expect(created.workers).toHaveLength(1);
        // The pool starts no thread any more: nothing of the runtime listens on process.
        expect(process.listenerCount('worker')).toBe(listening);
        await expectEndsAtExit(log, pipe, created);
        expect(process.listenerCount('worker')).toBe(listening);
        // Its late exit started no thread in its place.
        expect(created.workers).toHaveLength(1);
      } finally {
        await endHeldStart(pipe, held.starting, () => created.workers.every((w) => w.threadId === -1));
        created.stop();
      }
    },
    60_000,
  );
});
