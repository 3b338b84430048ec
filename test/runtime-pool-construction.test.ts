/**
 * piscina's constructor starts a runtime's threads one by one; Node can fail to create one part
 * way (no memory or thread left for it). The threads already made then have no pool to end them:
 * start() must end them itself, tell threadEnds, and reject with a code, and wait for them at
 * most startTimeoutMs (one may be held in a native call). The failure is made by the
 * MessageChannel piscina creates for each thread (failing-thread-channel.ts).
 */
import { Worker } from 'node:worker_threads';
import { afterEach, expect, it, vi } from 'vitest';
import { Runtime } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { canBlockInRead, HeldPipe } from './fixtures/blocked-in-read.js';
import { watchCreated } from './fixtures/created-workers.js';
import {
  failingChannelAt,
  restoreChannel,
  untilInitBlocksInRead,
} from './fixtures/failing-thread-channel.js';
import { endHeldStart, expectEndsAtExit, expectGaveUpWhileHeld } from './fixtures/held-init-start.js';
import { GATED_WORKER, rejection, until } from './fixtures/runtime-harness.js';
import { recorder, STOPPED } from './fixtures/thread-ends-recorder.js';

const NATIVE_INIT_BLOCK_WORKER = builtModuleUrl('test/fixtures/native-init-block-worker.js');

afterEach(() => {
  restoreChannel();
  vi.restoreAllMocks();
});

it.each([
  [1, 0],
  [3, 2],
])(
  'a thread that cannot be created (number %i): the %i made are ended and reported',
  async (failAt, madeBefore) => {
    const { log, ends } = recorder();
    const created = watchCreated();
    const failure = failingChannelAt(failAt);
    const err = await rejection(Runtime.start({ worker: GATED_WORKER, threads: 4, threadEnds: ends }));
    restoreChannel();
    created.stop();
    expect(err.code).toBe('OMNI_ERR_WORKER_EXITED');
    expect(err.cause).toBe(failure);
    expect(created.workers).toHaveLength(madeBefore);
    // Before: the error escaped uncoded, and the threads made before it idled for good.
    await until(() => created.workers.every((w) => w.threadId === -1), 'the threads made to exit');
    expect(log.slice(0, -1).sort()).toEqual([...created.ids].sort());
    expect(log.at(-1)).toBe(STOPPED);
  },
);

it.skipIf(!canBlockInRead)(
  'a thread made before the failure, held in a native call in its init: start() rejects within startTimeoutMs, threadEnds hears at its exit',
  async () => {
    const START_TIMEOUT_MS = 300;
    const pipe = new HeldPipe();
    const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const created = watchCreated();
    // Its first init counts from 1, so it blocks in read() (the fixture's first init does not).
    const inits = new Int32Array(new SharedArrayBuffer(4));
    inits[0] = 1;
    let settled = false;
    let starting: Promise<NodeJS.ErrnoException> | undefined;
    try {
      const { log, ends } = recorder();
      // The second thread fails only once the first is inside read(), in its init.
      const failure = failingChannelAt(2, () => untilInitBlocksInRead(inits, 1, pipe.readEnd));
      starting = rejection(
        Runtime.start({
          worker: NATIVE_INIT_BLOCK_WORKER,
          threads: 2,
          threadEnds: ends,
          startTimeoutMs: START_TIMEOUT_MS,
          workerData: { fd: pipe.readEnd, inits: inits.buffer },
        }),
      );
      void starting.finally(() => {
        settled = true;
      });
      // Before: start() waited for the thread's terminate(), which the read held for good.
      await until(() => settled, 'start() to settle while the thread is held in read()');
      const err = await starting;
      expectGaveUpWhileHeld(err, pipe, warning, START_TIMEOUT_MS);
      expect(err.cause).toBe(failure);
      expect(created.workers).toHaveLength(1);
      await expectEndsAtExit(log, pipe, created);
    } finally {
      await endHeldStart(pipe, starting, () => created.workers.every((w) => w.threadId === -1));
      created.stop();
    }
  },
);

// Mutant: the threads Node tells of before make() ran collected too (thread-starts.ts): a thread
// of the caller's, made in the same turn just before start(), was terminated and reported.
it("a thread of the caller's own, made in the turn start() was called: neither ended nor reported", async () => {
  const { log, ends } = recorder();
  const created = watchCreated();
  // Alive until terminated: it waits on a word nobody changes.
  const mine = new Worker('Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)', { eval: true });
  const mineId = mine.threadId;
  try {
    const failure = failingChannelAt(2);
    const err = await rejection(Runtime.start({ worker: GATED_WORKER, threads: 2, threadEnds: ends }));
    restoreChannel();
    created.stop();
    expect(err.code).toBe('OMNI_ERR_WORKER_EXITED');
    expect(err.cause).toBe(failure);
    // Mine, then the one start() made before the failure.
    expect(created.ids).toHaveLength(2);
    expect(created.ids[0]).toBe(mineId);
    expect(log).toEqual([created.ids[1], STOPPED]);
    expect(mine.threadId).toBe(mineId); // still running: not terminated by start()
  } finally {
    await mine.terminate();
  }
});
