/**
 * A thread that dies is replaced by piscina, which gives the replacement calls only once its
 * module, and with it the worker's init, has loaded. A replacement whose init never finishes
 * gets startTimeoutMs, as the first threads do in start(); past that the runtime is `failed`
 * (OMNI_ERR_WORKER_EXITED) instead of a thread short for good, or, with no other thread,
 * holding every call queued forever.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { builtModuleUrl, packageRoot } from '../src/paths.js';
import { blockedInRead, canBlockInRead, HeldPipe } from './fixtures/blocked-in-read.js';
import { runNode } from './fixtures/cli-process.js';
import { START_TIMEOUT_MS } from './fixtures/replacement-harness.js';
import { INVOKED, newControl, open, STARTED, waitFor } from './fixtures/runtime-control.js';
import {
  cleanupOnRealClock,
  codeOf,
  control,
  rejection,
  start,
  turns,
  until,
} from './fixtures/runtime-harness.js';
import { COUNT, newIds } from './fixtures/thread-exit-worker.js';

afterEach(cleanupOnRealClock);

const HANG_INIT_WORKER = builtModuleUrl('test/fixtures/runtime-hang-init-worker.js');
const THREAD_EXIT_WORKER = builtModuleUrl('test/fixtures/thread-exit-worker.js');

/**
 * A runtime whose `hangAt`-th thread to run init hangs there; one thread then exits. Returns
 * with setTimeout faked, so the replacement's startTimeoutMs (armed when the thread is lost)
 * passes only when the test says: with a real 2 s one, a loaded machine that took that long to
 * start the first threads failed start() itself.
 */
async function lostThread(threads: number) {
  const control = newControl();
  const rt = await start({
    worker: HANG_INIT_WORKER,
    threads,
    admission: { requests: 4 },
    startTimeoutMs: START_TIMEOUT_MS,
    workerData: { control: control.buffer, hangAt: threads + 1 },
  });
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  expect(await codeOf(rt.run({ exit: true }))).toBe('OMNI_ERR_WORKER_EXITED');
  // The replacement has begun its init (the one that never finishes).
  await waitFor(control, INVOKED, threads + 1);
  return rt;
}

/** The replacement's startTimeoutMs passes; back to the real clock. */
function replacementTimesOut(): void {
  try {
    vi.advanceTimersByTime(START_TIMEOUT_MS);
  } finally {
    vi.useRealTimers();
  }
}

describe('a replacement thread whose init never finishes', () => {
  it('one thread: the runtime fails and the calls queued for it are given back', async () => {
    const rt = await lostThread(1);
    const queued = rejection(rt.run({}));
    replacementTimesOut();
    await until(() => rt.state === 'failed', 'the runtime to fail');
    expect(rt.failure).toMatchObject({ code: 'OMNI_ERR_WORKER_EXITED' });
    expect((await queued).code).toBe('OMNI_ERR_WORKER_EXITED');
    expect(await codeOf(rt.run({}))).toBe('OMNI_ERR_UNAVAILABLE');
    expect(rt.report()).toMatchObject({ depth: 0 });
  });

  it('two threads: the runtime fails instead of serving a thread short, and still closes', async () => {
    const rt = await lostThread(2);
    replacementTimesOut();
    await until(() => rt.state === 'failed', 'the runtime to fail');
    expect(rt.failure).toMatchObject({ code: 'OMNI_ERR_WORKER_EXITED' });
    expect(await codeOf(rt.run({}))).toBe('OMNI_ERR_UNAVAILABLE');
    expect(rt.report()).toMatchObject({ depth: 0 });
    await expect(rt.close()).resolves.toMatchObject({ clean: true });
  });

  it('a process with nothing else to do waits for the call to settle, rather than exiting 13', async () => {
    const script = join(packageRoot, 'dist', 'test', 'fixtures', 'replacement-hang-script.js');
    // The script makes its replacement's timeout due itself: the limit only bounds a hang.
    const { code, stdout } = await runNode(script, [], 40_000);
    expect({ code, stdout }).toEqual({ code: 0, stdout: 'OMNI_ERR_WORKER_EXITED\n' });
  }, 50_000);
});

describe.skipIf(!canBlockInRead)('a replacement thread whose init is held in a native call', () => {
  // docs/runtime.md (Close hooks and startTimeoutMs): terminating cannot end that call, so the failed
  // runtime's close() returns only once it has returned; only a failed start() gives up on it.
  it('one thread: the runtime fails, and close() waits for that call, past startTimeoutMs too', async () => {
    const pipe = new HeldPipe();
    try {
      const ids = newIds();
      const rt = await start({
        worker: THREAD_EXIT_WORKER,
        threads: 1,
        admission: { requests: 4 },
        startTimeoutMs: START_TIMEOUT_MS,
        // The second init, the replacement's, blocks in read() on the pipe.
        workerData: { ids: ids.buffer, readAt: 2, fd: pipe.readEnd },
      });
      const dying = control();
      const running = rt.run({ mode: 'block-exit', control: dying.buffer as SharedArrayBuffer });
      const died = codeOf(running);
      await waitFor(dying, STARTED, 1, running);
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      open(dying);
      expect(await died).toBe('OMNI_ERR_WORKER_EXITED');
      await waitFor(ids, COUNT, 2);
      // Polled by turns of the loop: until() waits on setTimeout, which is faked here.
      while (!blockedInRead(pipe.readEnd)) await turns(1);
      try {
        // The replacement's bound passes (the runtime fails, its pool abandoned), then as long
        // again. Before: the abandoned pool's exits were waited for at most that long, and
        // close() returned with the thread still in its native call.
        vi.advanceTimersByTime(START_TIMEOUT_MS);
        await turns();
        expect(rt.state).toBe('failed');
        vi.advanceTimersByTime(START_TIMEOUT_MS);
      } finally {
        vi.useRealTimers();
      }
      let closed = false;
      const closing = rt.close().finally(() => {
        closed = true;
      });
      await turns();
      expect({ held: blockedInRead(pipe.readEnd), closed }).toEqual({ held: true, closed: false });
      pipe.release();
      await expect(closing).resolves.toMatchObject({ clean: true });
    } finally {
      pipe.release();
      await cleanupOnRealClock();
      pipe.close();
    }
  });
});
