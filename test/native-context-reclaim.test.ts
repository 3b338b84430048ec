/**
 * A LinearRuntime gives back the native context of a thread that ended without its close hook:
 * one terminated by a forced close while held in a call, or one that died mid-life. Its close
 * hook frees every other context, each exactly once. The fixture's live byte count is
 * process-wide (the threads share the library with this one), so it shows every context freed;
 * a context closed twice shows as a close the library refused (the fixture clears a context's
 * magic as it frees it), counted by the runtime's ContextReclaim.
 *
 * The runtime's threads run test fixtures with workers/native.ts's own hooks (Runtime.start is
 * given the fixture's module instead of workers/native.js); everything else is LinearRuntime's.
 */
import { once } from 'node:events';
import type { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type LinearRuntime, Runtime } from '../src/index.js';
import { ContextReclaim } from '../src/linear/context-reclaim.js';
import { FixtureFaults, loadNativeLibrary } from '../src/native/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { serve } from '../src/serve/index.js';
import { blockedInRead, canBlockInRead, HeldPipe } from './fixtures/blocked-in-read.js';
import { CaughtTimer } from './fixtures/caught-timer.js';
import {
  failingChannelAt,
  restoreChannel,
  untilInitBlocksInRead,
} from './fixtures/failing-thread-channel.js';
import {
  endHeldStart,
  expectGaveUpWhileHeld,
  HELD_START_TIMEOUT_MS,
  heldStart,
} from './fixtures/held-init-start.js';
import { closeRuntimes, start } from './fixtures/native-runtime-harness.js';
import { START_TIMEOUT_MS } from './fixtures/replacement-harness.js';
import { type GatedMode, newControl, open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { codeOf, rejection, turns, until } from './fixtures/runtime-harness.js';
import { postFloats } from './fixtures/serve-client.js';

const NATIVE_GATED_WORKER = builtModuleUrl('test/fixtures/native-gated-worker.js');
const NATIVE_INIT_FAULT_WORKER = builtModuleUrl('test/fixtures/native-init-fault-worker.js');
const NATIVE_INIT_STUCK_WORKER = builtModuleUrl('test/fixtures/native-init-stuck-worker.js');
const NATIVE_CLOSE_STUCK_WORKER = builtModuleUrl('test/fixtures/native-close-stuck-worker.js');
const NATIVE_HELD_WORKER = builtModuleUrl('test/fixtures/native-held-worker.js');
const NATIVE_INIT_EXIT_WORKER = builtModuleUrl('test/fixtures/native-init-exit-worker.js');
const NATIVE_LATE_EXIT_WORKER = builtModuleUrl('test/fixtures/native-late-exit-worker.js');

const faults = new FixtureFaults(loadNativeLibrary('fixture'));
const controls: Int32Array[] = [];

afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of controls.splice(0)) open(c);
  await closeRuntimes();
});

interface Started {
  readonly lr: LinearRuntime;
  /** The runtime's ContextReclaim (undefined if it made none). */
  readonly reclaim: ContextReclaim | undefined;
  readonly pool: Piscina;
  /** Fixture bytes held by each thread's context (equal contexts, no call has run). */
  readonly perThread: number;
}

/**
 * The next LinearRuntime's threads run `worker` with `extra` joined to their NativeWorkerData;
 * its ContextReclaim and its pool are kept. Undone by vi.restoreAllMocks().
 */
function spyStart(worker: string, extra: object) {
  const realStart = Runtime.start.bind(Runtime);
  vi.spyOn(Runtime, 'start').mockImplementation((options) =>
    realStart({ ...options, worker, workerData: { ...(options.workerData as object), ...extra } }),
  );
  const made: ContextReclaim[] = [];
  const realFor = ContextReclaim.forThreads.bind(ContextReclaim);
  vi.spyOn(ContextReclaim, 'forThreads').mockImplementation((n, library) => {
    const reclaim = realFor(n, library);
    made.push(reclaim);
    return reclaim;
  });
  const runs = vi.spyOn(Piscina.prototype, 'run');
  return { made, pool: () => runs.mock.contexts[0] as Piscina };
}

/** A LinearRuntime whose threads run the native gated worker (or `worker`), its pool and its ContextReclaim. */
async function startGated(
  threads: number,
  before: number,
  worker = NATIVE_GATED_WORKER,
  extra: object = {},
): Promise<Started> {
  const spied = spyStart(worker, extra);
  const lr = await start({ threads, inFeatures: 64, outFeatures: 32 });
  const pool = spied.pool();
  vi.restoreAllMocks();
  const perThread = (faults.liveBytes() - before) / threads;
  expect(perThread).toBeGreaterThan(0);
  return { lr, reclaim: spied.made[0], pool, perThread };
}

/**
 * A thread's exit, heard after the runtime's own listener (attached when the thread came up;
 * listeners run in the order they were added), so the runtime has done what it does at an exit.
 */
function exitOf(thread: Worker): Promise<void> {
  // Not events.once(): it rejects at the 'error' a thread dying of an uncaught error emits first.
  return new Promise((resolve) => thread.once('exit', () => resolve()));
}

/**
 * Closes `lr` while its one thread is held in read() on `pipe`: waits for the pool to remove the
 * thread, runs `whileHeld` (the thread terminated, not exited), then lets it out and resolves
 * close()'s result and whether close() resolved before the thread could exit (it must not).
 */
async function closeWhileHeld(
  lr: LinearRuntime,
  pool: Piscina,
  pipe: HeldPipe,
  whileHeld: () => void,
): Promise<{ result: unknown; closedBeforeExit: boolean | undefined }> {
  const removed = once(pool, 'workerDestroy');
  let closedBeforeExit: boolean | undefined;
  const closing = lr.close().then((result) => {
    closedBeforeExit ??= !pipe.released;
    return result;
  });
  await removed;
  await turns();
  expect(blockedInRead(pipe.readEnd)).toBe(true);
  whileHeld();
  pipe.release();
  const result = await closing;
  return { result, closedBeforeExit };
}

/**
 * Runs `body` with a pipe its test's thread blocks in read() on. Afterwards, failed or not, the
 * thread is let out of read() and the runtimes stopped before the pipe is closed.
 */
async function withHeldPipe(body: (pipe: HeldPipe) => Promise<void>): Promise<void> {
  const pipe = new HeldPipe();
  try {
    await body(pipe);
  } finally {
    pipe.release();
    await closeRuntimes();
    pipe.close();
  }
}

/**
 * After a start() that gave up on a thread held in read() on `pipe` with its context recorded:
 * that context is still the thread's own (not given back while it could still use it); once the
 * thread is let out of read(), it is given back, once.
 */
async function expectContextBackAtExit(
  pipe: HeldPipe,
  before: number,
  reclaim: ContextReclaim | undefined,
): Promise<void> {
  expect(faults.liveBytes()).toBeGreaterThan(before);
  expect(reclaim?.closed).toBe(0);
  pipe.release();
  await until(() => faults.liveBytes() === before, "the held thread's context to be given back");
  expect({ closed: reclaim?.closed, refused: reclaim?.refused }).toEqual({ closed: 1, refused: 0 });
}

/** A call held on its thread in a synchronous wait (as in a native call), until its control opens. */
async function held(lr: LinearRuntime, mode: GatedMode = 'gate') {
  const c = newControl();
  controls.push(c);
  const running = lr.runtime.run({ mode, control: c.buffer, sync: true });
  const call = codeOf(running);
  await waitFor(c, STARTED, 1, running);
  return { control: c, call };
}

describe("LinearRuntime gives back a lost thread's native context", () => {
  it("a forced close: the busy thread's context too, though it ran no close hook", async () => {
    const before = faults.liveBytes();
    const { lr, reclaim } = await startGated(2, before);
    const { call } = await held(lr);
    expect(await lr.close({ timeoutMs: 0 })).toEqual({ clean: false, abandoned: 1 });
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    // The idle thread freed its own in its hook; the main thread freed the busy one's.
    expect(faults.liveBytes()).toBe(before);
    expect({ closed: reclaim?.closed, refused: reclaim?.refused }).toEqual({ closed: 1, refused: 0 });
  });

  it('a clean close: every context freed once, by its own thread', async () => {
    const before = faults.liveBytes();
    const { lr, reclaim } = await startGated(3, before);
    // Every thread's context was recorded: the ledger has room for all three (and more).
    // Mutant: its room sized for one thread (linear-runtime.ts): two went unrecorded.
    expect(reclaim?.ledger.unrecorded).toBe(0);
    expect(await lr.close()).toEqual({ clean: true, abandoned: 0 });
    expect(faults.liveBytes()).toBe(before);
    // Nothing was left for the main thread, and nothing was closed twice.
    expect({ closed: reclaim?.closed, refused: reclaim?.refused }).toEqual({ closed: 0, refused: 0 });
  });

  it.each(['exit', 'uncaught'] as const)(
    'a thread that dies mid-call (%s) has its context given back at its exit, before any close',
    async (mode) => {
      const before = faults.liveBytes();
      const { lr, reclaim, pool, perThread } = await startGated(1, before);
      const exited = exitOf(pool.threads[0]!);
      expect(await codeOf(lr.runtime.run({ mode }))).toBe('OMNI_ERR_WORKER_EXITED');
      await exited;
      expect(reclaim?.closed).toBe(1);
      // The replacement serves (its own context open): one context's worth, not two.
      expect(await lr.runtime.run({ mode: 'echo', value: 1 })).toBe(1);
      expect(faults.liveBytes() - before).toBe(perThread);
      expect(await lr.close()).toEqual({ clean: true, abandoned: 0 });
      expect(faults.liveBytes()).toBe(before);
      expect({ closed: reclaim?.closed, refused: reclaim?.refused }).toEqual({ closed: 1, refused: 0 });
    },
  );

  it('a thread terminated while idle has its context given back at its exit', async () => {
    const before = faults.liveBytes();
    const { lr, reclaim, pool, perThread } = await startGated(2, before);
    const thread = pool.threads[0]!;
    const exited = exitOf(thread);
    const replaced = once(pool, 'workerCreate');
    await thread.terminate();
    await exited;
    expect(reclaim?.closed).toBe(1);
    // Up once its init has run: the survivor's context and the replacement's, not three.
    await replaced;
    expect(faults.liveBytes() - before).toBe(2 * perThread);
    expect(await lr.close()).toEqual({ clean: true, abandoned: 0 });
    expect(faults.liveBytes()).toBe(before);
    expect({ closed: reclaim?.closed, refused: reclaim?.refused }).toEqual({ closed: 1, refused: 0 });
  });

  it('repeated forced closes of fresh runtimes leave no context behind', async () => {
    const before = faults.liveBytes();
    for (let round = 0; round < 3; round++) {
      const { lr, reclaim } = await startGated(2, before);
      const { call } = await held(lr);
      expect(await lr.close({ timeoutMs: 0 })).toEqual({ clean: false, abandoned: 1 });
      expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
      expect(faults.liveBytes()).toBe(before);
      expect(reclaim?.refused).toBe(0);
    }
  });
  it("a thread whose init fails after recording its context closes it once: its own, the main thread's none", async () => {
    const before = faults.liveBytes();
    const spied = spyStart(NATIVE_INIT_FAULT_WORKER, {});
    // Every thread's weight upload fails, after its context was opened and recorded.
    expect(await codeOf(start({ threads: 2, inFeatures: 64, outFeatures: 32 }))).toBe('OMNI_ERR_NATIVE');
    vi.restoreAllMocks();
    const reclaim = spied.made[0];
    // Each init's failure path took its record back before closing, so the failed start's sweep
    // of every record found nothing: no context left, none closed twice.
    expect(faults.liveBytes()).toBe(before);
    expect({ closed: reclaim?.closed, refused: reclaim?.refused }).toEqual({ closed: 0, refused: 0 });
  });

  it('threads replaced one after another (exit, uncaught error) each give theirs back at their exit: the record never fills', async () => {
    const before = faults.liveBytes();
    // One thread: room for two records, so every slot is freed and reused several times.
    const { lr, reclaim, pool, perThread } = await startGated(1, before);
    const rounds = 6;
    for (let round = 0; round < rounds; round++) {
      const exited = exitOf(pool.threads[0]!);
      const mode = round % 2 === 0 ? 'exit' : 'uncaught';
      expect(await codeOf(lr.runtime.run({ mode }))).toBe('OMNI_ERR_WORKER_EXITED');
      await exited;
      expect(reclaim?.closed).toBe(round + 1);
      // The replacement serves, its context recorded: one context's worth, not one per death.
      expect(await lr.runtime.run({ mode: 'echo', value: round })).toBe(round);
      expect(faults.liveBytes() - before).toBe(perThread);
    }
    expect(reclaim?.ledger.unrecorded).toBe(0);
    expect(await lr.close()).toEqual({ clean: true, abandoned: 0 });
    expect(faults.liveBytes()).toBe(before);
    expect({ closed: reclaim?.closed, refused: reclaim?.refused }).toEqual({ closed: rounds, refused: 0 });
  });

  it('a replacement that ends its thread in its init, its context recorded: given back at its exit, before any close', async () => {
    // piscina removes such a thread only once it has exited (it never came up), so the runtime
    // must have found it when it was made, right after the thread it replaces was removed.
    const before = faults.liveBytes();
    const inits = new Int32Array(new SharedArrayBuffer(4));
    const { lr, reclaim, pool } = await startGated(1, before, NATIVE_INIT_EXIT_WORKER, {
      inits: inits.buffer,
    });
    const first = exitOf(pool.threads[0]!);
    expect(await codeOf(lr.runtime.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
    await first;
    // Made in the same turn as the first one's removal, before this listener ran.
    const replacement = pool.threads[0];
    expect(replacement).toBeDefined();
    await exitOf(replacement!);
    expect(inits[0]).toBe(2);
    // Before: 1 (the replacement's context waited for close(), and for good if that close
    // found another thread that did not exit in time).
    expect(reclaim?.closed).toBe(2);
    expect(faults.liveBytes()).toBe(before);
    await lr.close();
    expect(faults.liveBytes()).toBe(before);
    expect({ closed: reclaim?.closed, refused: reclaim?.refused }).toEqual({ closed: 2, refused: 0 });
  });

  it.skipIf(!canBlockInRead)(
    'a replacement held in a native call in its init, its context recorded, when close() comes: given back once it has exited',
    async () => {
      await withHeldPipe(async (pipe) => {
        const readEnd = pipe.readEnd;
        const before = faults.liveBytes();
        const inits = new Int32Array(new SharedArrayBuffer(4));
        const { lr, reclaim, pool, perThread } = await startGated(1, before, NATIVE_INIT_STUCK_WORKER, {
          fd: readEnd,
          inits: inits.buffer,
        });
        expect(await codeOf(lr.runtime.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
        // The replacement has opened and recorded its context, and is inside read() now.
        await waitFor(inits, 0, 2);
        await until(() => blockedInRead(readEnd), 'the replacement to block in read()');
        await until(() => reclaim?.closed === 1, "the first thread's context to be given back");
        expect(faults.liveBytes() - before).toBe(perThread);
        // close() destroys the pool, terminating the replacement (it never came up, so it runs no
        // hook), and waits for its exit, which the native call holds until the test lets it go.
        const { result, closedBeforeExit } = await closeWhileHeld(lr, pool, pipe, () => {
          // Terminated but not exited (still inside read()): its context is still its own.
          expect(faults.liveBytes() - before).toBe(perThread);
        });
        expect(result).toEqual({ clean: true, abandoned: 0 });
        expect(closedBeforeExit, 'close() resolved only once the replacement had exited').toBe(false);
        expect(faults.liveBytes()).toBe(before);
        expect({ closed: reclaim?.closed, refused: reclaim?.refused }).toEqual({ closed: 2, refused: 0 });
      });
    },
  );
  it.skipIf(!canBlockInRead)(
    'a start whose pool cannot make its second thread, the first held in its init with its context recorded: given back once it has exited',
    async () => {
      const startTimeoutMs = 300;
      const pipe = new HeldPipe();
      // start() gives up waiting for the held thread's exit: expected here.
      const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
      // Its first init counts from 1, so it opens and records its context, then blocks in read().
      const inits = new Int32Array(new SharedArrayBuffer(4));
      inits[0] = 1;
      let settled = false;
      let starting: Promise<NodeJS.ErrnoException> | undefined;
      try {
        const before = faults.liveBytes();
        const spied = spyStart(NATIVE_INIT_STUCK_WORKER, { fd: pipe.readEnd, inits: inits.buffer });
        // The second thread fails only once the first is inside read(), in its init.
        failingChannelAt(2, () => untilInitBlocksInRead(inits, 1, pipe.readEnd));
        starting = rejection(start({ threads: 2, inFeatures: 64, outFeatures: 32, startTimeoutMs }));
        void starting.finally(() => {
          settled = true;
        });
        // Before: start() waited for the thread's terminate(), which the read held for good.
        await until(() => settled, 'start() to settle while the thread is held in read()');
        expectGaveUpWhileHeld(await starting, pipe, warning, startTimeoutMs);
        await expectContextBackAtExit(pipe, before, spied.made[0]);
      } finally {
        restoreChannel();
        await endHeldStart(pipe, starting);
      }
    },
  );
  it.skipIf(!canBlockInRead)(
    'a start whose one thread is held in a native call in its init, its context recorded: start() rejects, the context given back once the thread has exited',
    async () => {
      const pipe = new HeldPipe();
      // start() gives up waiting for the held thread's exit: expected here.
      const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
      // Its first init counts from 1, so it opens and records its context, then blocks in read().
      const inits = new Int32Array(new SharedArrayBuffer(4));
      inits[0] = 1;
      const before = faults.liveBytes();
      const spied = spyStart(NATIVE_INIT_STUCK_WORKER, { fd: pipe.readEnd, inits: inits.buffer });
      const held = heldStart(() =>
        start({ threads: 1, inFeatures: 64, outFeatures: 32, startTimeoutMs: HELD_START_TIMEOUT_MS }),
      );
      try {
        expectGaveUpWhileHeld(
          await held.givenUp(inits, 2, pipe.readEnd),
          pipe,
          warning,
          HELD_START_TIMEOUT_MS,
        );
        await expectContextBackAtExit(pipe, before, spied.made[0]);
      } finally {
        await endHeldStart(pipe, held.starting);
      }
    },
    60_000,
  );
  // Mutant: the ledger's room one entry per thread (ContextReclaim.forThreads): a replacement
  // that starts while the thread it replaces is held in its exit found it full, unrecorded.
  it.skipIf(!canBlockInRead)(
    "a dead thread held in its exit while its replacement starts: both recorded, the dead one's given back at its exit",
    async () => {
      await withHeldPipe(async (pipe) => {
        const before = faults.liveBytes();
        const { lr, reclaim, perThread } = await startGated(1, before, NATIVE_LATE_EXIT_WORKER);
        expect(await codeOf(lr.runtime.run({ die: pipe.readEnd }))).toBe('OMNI_ERR_WORKER_EXITED');
        // Served by its replacement, whose init has recorded its context.
        expect(await lr.runtime.run({})).toBe(1);
        expect(blockedInRead(pipe.readEnd)).toBe(true);
        expect(reclaim?.ledger.unrecorded).toBe(0);
        expect(faults.liveBytes() - before).toBe(2 * perThread);

        pipe.release();
        await until(() => reclaim?.closed === 1, "the dead thread's context to be given back");
        expect(faults.liveBytes() - before).toBe(perThread);
        expect(await lr.close()).toEqual({ clean: true, abandoned: 0 });
        expect(faults.liveBytes()).toBe(before);
        expect({ closed: reclaim?.closed, refused: reclaim?.refused }).toEqual({ closed: 1, refused: 0 });
      });
    },
  );
  it.skipIf(!canBlockInRead)(
    'a close hook held in a native call past startTimeoutMs: the thread, terminated, exits late and its context comes back',
    async () => {
      await withHeldPipe(async (pipe) => {
        const before = faults.liveBytes();
        const spied = spyStart(NATIVE_CLOSE_STUCK_WORKER, { fd: pipe.readEnd });
        const lr = await start({
          threads: 1,
          inFeatures: 64,
          outFeatures: 32,
          startTimeoutMs: START_TIMEOUT_MS,
        });
        const pool = spied.pool();
        const reclaim = spied.made[0];
        vi.restoreAllMocks();
        // The close warns that the hook did not finish: expected here.
        vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
        // The hook's round gives up at startTimeoutMs, the first bound close() arms: made due once
        // the hook is in its native call. The pool's destroy() then terminates the thread, whose
        // exit the native call holds.
        const giveUp = new CaughtTimer(START_TIMEOUT_MS, () => true);
        let closed: Awaited<ReturnType<typeof closeWhileHeld>>;
        try {
          const closing = closeWhileHeld(lr, pool, pipe, () => {
            expect(faults.liveBytes()).toBeGreaterThan(before);
          });
          await until(
            () => giveUp.caught && blockedInRead(pipe.readEnd),
            'the close hook to block in read()',
          );
          giveUp.fire();
          closed = await closing;
        } finally {
          giveUp.restore();
        }
        const { result, closedBeforeExit } = closed;
        expect(result).toEqual({ clean: true, abandoned: 0 });
        expect(closedBeforeExit).toBe(false);
        expect(faults.liveBytes()).toBe(before);
        expect({ closed: reclaim?.closed, refused: reclaim?.refused }).toEqual({ closed: 1, refused: 0 });
      });
    },
  );
  it("a server's drain that times out (serve): the held thread's context comes back with the runtime's close", async () => {
    const before = faults.liveBytes();
    const held = new Int32Array(new SharedArrayBuffer(8));
    const spied = spyStart(NATIVE_HELD_WORKER, { held: held.buffer });
    const lr = await start({ threads: 2, inFeatures: 4, outFeatures: 2 });
    vi.restoreAllMocks();
    const reclaim = spied.made[0];
    const server = await serve(lr, { port: 0 });
    const request = postFloats(server.address, [1, 2, 3, 4]).then(
      (answer) => answer.status,
      () => 'connection closed',
    );
    await waitFor(held, 0, 1, request);
    expect(await server.drain({ timeoutMs: 50 })).toEqual({ clean: false, abandonedRequests: 1 });
    // Its worker was terminated: a 503 (the server went away), or the connection cut.
    expect([503, 'connection closed']).toContain(await request);
    expect(faults.liveBytes()).toBe(before);
    expect({ closed: reclaim?.closed, refused: reclaim?.refused }).toEqual({ closed: 1, refused: 0 });
  });
});
