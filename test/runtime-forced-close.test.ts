/**
 * close({ timeoutMs }) once its timeout has passed with calls still running: the calls are
 * abandoned at once, the threads running them are terminated without their close hooks (a
 * native call cannot be interrupted), and every other thread runs its hook first (one idle
 * then, or a replacement that comes up while those hooks run), so a process that force-closes
 * runtimes does not leak one native context per such thread each time; the native contexts of
 * the threads that ran no hook are given back by the main thread once they have exited (the
 * LinearRuntime worker's ContextReclaim). Hooks are counted in shared memory by the close-count
 * worker; the busy thread is held in a synchronous wait (as in a native call) that the test never
 * opens before the close.
 */
import { once } from 'node:events';
import { Piscina } from 'piscina';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type RuntimeOptions, seededWeights } from '../src/index.js';
import { ContextReclaim } from '../src/linear/context-reclaim.js';
import type { NativeWorkerData } from '../src/linear/protocol.js';
import { FixtureFaults, loadNativeLibrary } from '../src/native/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { INVOKED, open, SIGNALLED, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, codeOf, control, gate, rejection, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const CLOSE_COUNT_WORKER = builtModuleUrl('test/fixtures/close-count-worker.js');
const NATIVE_GATED_WORKER = builtModuleUrl('test/fixtures/native-gated-worker.js');
const NATIVE_LATE_REPLACEMENT_WORKER = builtModuleUrl('test/fixtures/native-late-replacement-worker.js');

/**
 * Runtime options for `threads` threads of a worker with the LinearRuntime worker's hooks,
 * wired as LinearRuntime wires them: each thread records its native context in the ledger, and
 * the runtime tells the ContextReclaim of every thread's end.
 */
function nativeThreads(worker: string, threads: number, data: NativeWorkerData & object) {
  const reclaim = ContextReclaim.forThreads(threads, loadNativeLibrary('fixture'));
  const options: Partial<RuntimeOptions> = {
    worker,
    threads,
    workerData: { ...data, contexts: reclaim.ledger.buffer },
    threadEnds: reclaim,
  };
  return { reclaim, options };
}

/**
 * `threads` threads of `worker` wired as nativeThreads() wires them, started, one held in a call
 * that a forced close will abandon. Their contexts are equal (same weights, no call has used a
 * workspace); the fixture's byte count is process-wide (the threads share the library with this
 * one), so `before` is taken first.
 */
async function nativeOneHeld(worker: string, threads: number, data: NativeWorkerData & object) {
  const faults = new FixtureFaults(loadNativeLibrary('fixture'));
  const before = faults.liveBytes();
  const { reclaim, options } = nativeThreads(worker, threads, data);
  const rt = await start(options);
  const perThread = (faults.liveBytes() - before) / threads;
  expect(perThread).toBeGreaterThan(0);
  const stuck = control();
  const running = rt.run(gate(stuck, { sync: true }));
  const call = codeOf(running);
  await waitFor(stuck, STARTED, 1, running);
  return { faults, before, reclaim, rt, call };
}

/**
 * Force-closes `held.rt`, abandoning its held call, and checks every context came back:
 * `closed` of them closed by the main thread (ContextReclaim), none of them twice.
 */
async function expectForcedCloseFreesAll(
  held: Awaited<ReturnType<typeof nativeOneHeld>>,
  closed: number,
): Promise<void> {
  expect(await held.rt.close({ timeoutMs: 0 })).toEqual({ clean: false, abandoned: 1 });
  expect(await held.call).toBe('OMNI_ERR_WORKER_EXITED');
  expect(held.faults.liveBytes()).toBe(held.before);
  expect({ closed: held.reclaim.closed, refused: held.reclaim.refused }).toEqual({ closed, refused: 0 });
}

/** Two threads, one held in a call that will be abandoned, the other idle. */
async function oneBusyOneIdle(
  hooks: { closeGate?: boolean; closeHangs?: boolean } = {},
  startTimeoutMs = 30_000,
) {
  const closed = control();
  const rt = await start({
    worker: CLOSE_COUNT_WORKER,
    threads: 2,
    startTimeoutMs,
    admission: { requests: 2, units: 8 },
    workerData: { closed: closed.buffer, ...hooks },
  });
  const stuck = control();
  const running = rt.run(gate(stuck, { sync: true }), { cost: 5 });
  const call = codeOf(running);
  await waitFor(stuck, STARTED, 1, running);
  expect(rt.report()).toMatchObject({ depth: 1, units: 5, running: 1 });
  return { rt, closed, call };
}

describe('close({ timeoutMs }) cut short by its timeout', () => {
  it("runs the idle thread's close hook, not the busy one's, and still abandons the call", async () => {
    const { rt, closed, call } = await oneBusyOneIdle();
    expect(await rt.close({ timeoutMs: 0 })).toEqual({ clean: false, abandoned: 1 });
    // One hook: the idle thread's. The busy thread, held in its call, was terminated without.
    expect(Atomics.load(closed, INVOKED)).toBe(1);
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    // The call was over once abandoned: what piscina reports for it at the termination ends
    // nothing twice (no call counted below zero, no capacity given back twice).
    expect(rt.report()).toMatchObject({
      state: 'stopped',
      depth: 0,
      units: 0,
      leaked: 0,
      failed: 1,
      running: 0,
      queued: 0,
    });
  });

  it('abandons the call at the timeout, not once the idle hooks have returned', async () => {
    const { rt, closed, call } = await oneBusyOneIdle({ closeGate: true });
    const closing = rt.close({ timeoutMs: 0 });
    // The idle thread's hook is held at its gate (one skipped fails the wait as close() ends).
    await waitFor(closed, INVOKED, 1, closing);
    expect(Atomics.load(closed, INVOKED)).toBe(1);
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    // Capacity is back once, at the abandonment, while the hook still runs. Nothing counts as
    // running or queued: the ping holding the idle thread and the thread still in the abandoned
    // call are busy, but no call is outstanding.
    expect(rt.report()).toMatchObject({
      state: 'draining',
      depth: 0,
      units: 0,
      failed: 1,
      running: 0,
      queued: 0,
    });
    expect(Atomics.load(closed, STARTED)).toBe(0);
    open(closed); // the hook returns
    expect(await closing).toEqual({ clean: false, abandoned: 1 });
    expect(Atomics.load(closed, STARTED)).toBe(1); // the hook returned before its thread stopped
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, units: 0, leaked: 0, failed: 1 });
  });

  // Asked to stop as an aborted call is: a handler that honours ctx.signal can end its work
  // while the idle threads' hooks still run (and a call still queued is skipped, never run).
  it("aborts the abandoned call's ctx.signal before its thread is terminated", async () => {
    const closed = control();
    const rt = await start({
      worker: CLOSE_COUNT_WORKER,
      threads: 2,
      admission: { requests: 2 },
      workerData: { closed: closed.buffer, closeGate: true },
    });
    const held = control();
    const running = rt.run(gate(held, { awaitSignal: true }));
    const call = codeOf(running);
    await waitFor(held, STARTED, 1, running);
    const closing = rt.close({ timeoutMs: 0 });
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    // The idle thread's hook holds the teardown at its gate: the abandoned call's thread is
    // still up, and its handler hears the signal.
    await waitFor(closed, INVOKED, 1, closing);
    await waitFor(held, SIGNALLED, 1, closing);
    open(closed);
    expect(await closing).toEqual({ clean: false, abandoned: 1 });
  });

  // The order under test, a call's end reaching the main thread before another thread's hook
  // returns, is between two threads' messages, which no handshake between the threads orders:
  // the test waits for piscina's own 'drain' event (a thread came free) on the runtime's pool.
  it('runs the hook of a thread whose abandoned call ends while the idle hooks run', async () => {
    const closed = control();
    const rt = await start({
      worker: CLOSE_COUNT_WORKER,
      threads: 2,
      admission: { requests: 2 },
      workerData: { closed: closed.buffer, closeGate: true },
    });
    const runs = vi.spyOn(Piscina.prototype, 'run');
    const held = control();
    const running = rt.run(gate(held, { awaitSignal: true }));
    const call = codeOf(running);
    await waitFor(held, STARTED, 1, running);
    const pool = runs.mock.contexts[0] as Piscina;
    runs.mockRestore();
    const closing = rt.close({ timeoutMs: 0 });
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    // The idle thread's hook waits at its gate; the abandoned call hears its signal and ends.
    await waitFor(closed, INVOKED, 1, closing);
    await waitFor(held, SIGNALLED, 1, closing);
    const free = once(pool, 'drain');
    open(held);
    await free;
    open(closed);
    expect(await closing).toEqual({ clean: false, abandoned: 1 });
    // Both threads ran their hook (and each returned): the call's thread after it was free.
    expect(Atomics.load(closed, INVOKED)).toBe(2);
    expect(Atomics.load(closed, STARTED)).toBe(2);
  });

  it('a later close timeout cuts an idle hook that never returns short', async () => {
    // startTimeoutMs out of reach: only the second timeout can end the hook's wait.
    const { rt, closed, call } = await oneBusyOneIdle({ closeHangs: true }, 600_000);
    const closing = rt.close({ timeoutMs: 0 });
    await waitFor(closed, INVOKED, 1, closing);
    expect(Atomics.load(closed, INVOKED)).toBe(1);
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    expect(rt.close({ timeoutMs: 0 })).toBe(closing);
    expect(await closing).toEqual({ clean: false, abandoned: 1 });
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, units: 0, leaked: 0 });
  });

  it('bounds an idle hook that never returns by startTimeoutMs, as a clean close does', async () => {
    // startTimeoutMs bounds the hook on a fake clock, made due once the hook runs: a real 2 s one
    // bounded start() too, which a loaded machine did not always fit in.
    const { rt, closed, call } = await oneBusyOneIdle({ closeHangs: true }, 600_000);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let closing: Promise<unknown>;
    try {
      closing = rt.close({ timeoutMs: 0 });
      vi.advanceTimersByTime(0); // the close timeout: the call is abandoned, the hooks' round begins
      // The round's bound is armed as its messages are sent: before the hook can begin.
      await waitFor(closed, INVOKED, 1, closing);
      expect(Atomics.load(closed, INVOKED)).toBe(1);
      vi.advanceTimersByTime(600_000);
    } finally {
      vi.useRealTimers();
    }
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    expect(await closing).toEqual({ clean: false, abandoned: 1 });
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, units: 0, leaked: 0 });
  });

  it("frees the idle thread's native context in its hook, and the busy thread's once it has exited", async () => {
    const data: NativeWorkerData = { backend: 'fixture', device: undefined, weights: seededWeights(64, 32) };
    const held = await nativeOneHeld(NATIVE_GATED_WORKER, 2, data);
    // Nothing is left behind: the busy thread, terminated without its hook, had its context
    // closed by the main thread, once (and the idle thread's hook closed its own, once).
    await expectForcedCloseFreesAll(held, 1);
  });

  it("frees the context of a lost thread's replacement that comes up while the idle hooks run", async () => {
    const words = new SharedArrayBuffer(8);
    const data = {
      backend: 'fixture',
      device: undefined,
      weights: seededWeights(64, 32),
      words,
      threads: 3,
    } satisfies NativeWorkerData & { words: SharedArrayBuffer; threads: number };
    const held = await nativeOneHeld(NATIVE_LATE_REPLACEMENT_WORKER, 3, data);
    // An idle thread takes it and ends without its hook (its context is lost with it); the
    // replacement waits in its init until the remaining idle thread's close hook lets it go on.
    expect(await codeOf(held.rt.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
    await waitFor(new Int32Array(words), 0, 4);
    // Nothing left behind. The idle thread freed its own, and the replacement, up once that hook
    // had let it finish its init, freed its own too; the main thread closed the exited thread's
    // and the busy thread's, each once.
    await expectForcedCloseFreesAll(held, 2);
  });
});

describe('close({ timeoutMs }) and a call that never reached a worker', () => {
  // PendingTask joined the calls a close timeout abandons before it followed the caller's
  // signal: a signal that could not be followed ended the call then (rejected, capacity back),
  // yet left it among them, and the close timeout ended it a second time. run() now follows the
  // signal before admission (counted invalid, no task made); the close must still end only one.
  it('a call whose signal could not be followed is not abandoned again', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const stuck = control();
    const running = rt.run(gate(stuck, { sync: true }));
    const held = codeOf(running);
    await waitFor(stuck, STARTED, 1, running);
    const signal = new AbortController().signal;
    const refusal = new Error('this signal takes no listener');
    // The runtime adds its listener through EventTarget.prototype, not the signal's own
    // addEventListener; Node's method reads the signal's own `constructor` as it adds one.
    Object.defineProperty(signal, 'constructor', {
      get() {
        throw refusal;
      },
    });
    expect(await rejection(rt.run(gate(control()), { signal }))).toBe(refusal);
    expect(rt.report()).toMatchObject({ depth: 1, invalid: 1, failed: 0, running: 1, queued: 0 });
    expect(await rt.close({ timeoutMs: 0 })).toEqual({ clean: false, abandoned: 1 });
    expect(await held).toBe('OMNI_ERR_WORKER_EXITED');
    // Each counted once: the calls made still add up.
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, failed: 1, invalid: 1, running: 0 });
  });
});
