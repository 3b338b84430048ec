/**
 * Edges of the runtime the other runtime tests left unguarded (found by changing the code on
 * purpose and seeing which changes no test noticed, each named in its test's comment): no
 * failure left by close's own thread exits, timers and listeners let go when a call ends, a
 * task context that outlives its task, a replacement stuck in a native call during init. Threads are ordered by shared-memory words and bounded polling, never by sleeps.
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { blockedInRead, canBlockInRead, HeldPipe } from './fixtures/blocked-in-read.js';
import { CANCELLED, CANCELLED_FALSE, open, SIGNALLED, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, codeOf, control, gate, start, turns, until } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const CONTEXT_WORKER = builtModuleUrl('test/fixtures/task-context-worker.js');
const NATIVE_INIT_WORKER = builtModuleUrl('test/fixtures/native-init-block-worker.js');

/** A runtime closed with a 0 ms timeout while one call runs: that call abandoned, the pool gone. */
async function forceClosedWithACallRunning() {
  const rt = await start({ threads: 2, admission: { requests: 2 } });
  const stuck = control();
  const call = rt.run(gate(stuck, { sync: true }));
  const code = codeOf(call);
  await waitFor(stuck, STARTED, 1, call);
  await expect(rt.close({ timeoutMs: 0 })).resolves.toEqual({ clean: false, abandoned: 1 });
  expect(await code).toBe('OMNI_ERR_WORKER_EXITED');
  await turns();
  return rt;
}

describe('close() stopping its own threads', () => {
  // Mutant: #checkThreads without its `tearingDown` guard (src/runtime/pool-guard.ts): the threads a
  // close stops would read as a lost pool and leave a sticky failure behind.
  it('a clean close leaves no failure behind', async () => {
    const rt = await start({ threads: 2 });
    await expect(rt.run({ mode: 'echo', value: 1 })).resolves.toBe(1);
    await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
    await turns();
    expect(rt.state).toBe('stopped');
    expect(rt.failure).toBeUndefined();
  });

  it('a forced close leaves no failure behind either', async () => {
    const rt = await forceClosedWithACallRunning();
    expect(rt.state).toBe('stopped');
    expect(rt.failure).toBeUndefined();
  });
});

describe("the runtime's default deadline", () => {
  // Mutant: checkRunOptions keeping the default deadline only for run() without options
  // (src/runtime/options.ts): a call that passes options for anything else (a signal, say) would
  // lose it. The deadline timer runs on a fake clock: it is made due, not waited for.
  it('applies to a call given options without a deadlineMs', async () => {
    const rt = await start({ threads: 1, deadlineMs: 60_000 });
    const c = control();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let code: string | undefined;
      const call = rt.run(gate(c), { signal: new AbortController().signal });
      call.then(
        () => {
          code = 'resolved';
        },
        (err: { code?: string }) => {
          code = err.code ?? 'none';
        },
      );
      await waitFor(c, STARTED, 1, call);
      vi.advanceTimersByTime(60_000);
      await turns();
      expect(code).toBe('OMNI_ERR_DEADLINE');
    } finally {
      vi.useRealTimers();
      open(c);
    }
  });

  // Mutant: checkRunOptions taking a call's Infinity (no deadline) as none given, so that the
  // runtime's default applied after all (src/runtime/options.ts): Infinity is documented to lift it.
  it('is lifted by a call whose deadlineMs is Infinity', async () => {
    const rt = await start({ threads: 1, deadlineMs: 60_000 });
    const c = control();
    let code: string | undefined;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    // Made while the clock is fake, so that a deadline it were given would be made due below.
    const call = rt.run(gate(c, { value: 7 }), { deadlineMs: Number.POSITIVE_INFINITY });
    call.catch((err: { code?: string }) => {
      code = err.code ?? 'none';
    });
    try {
      await waitFor(c, STARTED, 1, call);
      vi.advanceTimersByTime(120_000);
      await turns();
      expect(code).toBeUndefined();
    } finally {
      vi.useRealTimers();
      open(c);
    }
    await expect(call).resolves.toBe(7);
  });
});

describe('a call that has ended leaves nothing behind', () => {
  // Mutant: PendingTask#detach without removeEventListener (src/runtime/pending-task.ts): every
  // call would leave its listener on the caller's signal, which may be long-lived (a server's).
  it("its abort listener is removed from the caller's signal", async () => {
    const rt = await start({ threads: 1 });
    const ac = new AbortController();
    await expect(rt.run({ mode: 'echo', value: 1 }, { signal: ac.signal })).resolves.toBe(1);
    const c = control();
    const aborted = rt.run(gate(c, { value: 2 }), { signal: ac.signal, deadlineMs: 600_000 });
    await waitFor(c, STARTED, 1, aborted);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1); // the running call's own
    const other = new AbortController();
    const third = rt.run({ mode: 'echo', value: 3 }, { signal: other.signal }); // queued behind it
    other.abort();
    expect(await codeOf(third)).toBe('OMNI_ERR_ABORTED');
    expect(getEventListeners(other.signal, 'abort')).toHaveLength(0);
    open(c);
    await expect(aborted).resolves.toBe(2);
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
  });

  // Mutant: PendingTask#detach without clearLongTimeout (src/runtime/pending-task.ts): a call's
  // deadline timer outlives the call (and holds the event loop for as long as the deadline).
  it('its deadline timer is cleared, whether the call completed or its caller aborted', async () => {
    const rt = await start({ threads: 1 });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      await expect(rt.run({ mode: 'echo', value: 1 }, { deadlineMs: 600_000 })).resolves.toBe(1);
      expect(vi.getTimerCount()).toBe(0);
      const c = control();
      const ac = new AbortController();
      const call = rt.run(gate(c), { signal: ac.signal, deadlineMs: 600_000 });
      await waitFor(c, STARTED, 1, call);
      expect(vi.getTimerCount()).toBe(1); // its deadline, armed at dispatch
      ac.abort();
      expect(await codeOf(call)).toBe('OMNI_ERR_ABORTED');
      expect(vi.getTimerCount()).toBe(0);
      open(c);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('one long-lived signal shared by many calls in flight', () => {
  // Every call added a listener of its own to the caller's signal: with more than 10 in flight
  // Node warned of a "possible EventTarget memory leak" (MaxListenersExceededWarning), and each
  // add walked the whole list (a server-wide signal with thousands of calls in flight paid a
  // quadratic cost). The calls now share one listener per signal.
  it.each([
    ['serial', undefined],
    ['wait mode (waiting for admission, then dispatched)', { requests: 1, wait: true }],
  ] as const)('%s: one listener, no leak warning, none left after', async (_mode, admission) => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning.name);
    };
    process.on('warning', onWarning);
    try {
      const rt = await start({ threads: 1, ...(admission ? { admission } : {}) });
      const ac = new AbortController();
      const c = control();
      const first = rt.run(gate(c, { value: 'first' }), { signal: ac.signal, deadlineMs: 600_000 });
      await waitFor(c, STARTED, 1, first);
      const calls = Array.from({ length: 20 }, (_, i) =>
        rt.run({ mode: 'echo', value: i }, { signal: ac.signal, deadlineMs: 600_000 }),
      );
      // Serial: each call is dispatched (and follows the signal) once its admit() has resolved;
      // read before then, the listeners would be those of the first call alone.
      await turns(1);
      expect(rt.report()).toMatchObject(admission ? { depth: 1, waiting: 20 } : { depth: 21, waiting: 0 });
      expect(getEventListeners(ac.signal, 'abort')).toHaveLength(1);
      open(c);
      await expect(first).resolves.toBe('first');
      await expect(Promise.all(calls)).resolves.toEqual(calls.map((_, i) => i));
      expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
      await turns(); // process 'warning' is emitted on a later tick
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('an abort reaches every call that follows the signal, and leaves none behind', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2, wait: true } });
    const ac = new AbortController();
    const c = control();
    const running = rt.run(gate(c), { signal: ac.signal });
    await waitFor(c, STARTED, 1, running);
    const queued = rt.run({ mode: 'echo', value: 1 }, { signal: ac.signal }); // dispatched, queued
    const waiting = Array.from({ length: 3 }, () => rt.run({ mode: 'echo' }, { signal: ac.signal }));
    expect(rt.report()).toMatchObject({ depth: 2, waiting: 3 });
    ac.abort();
    const codes = await Promise.all([running, queued, ...waiting].map((call) => codeOf(call)));
    expect(codes).toEqual(Array(5).fill('OMNI_ERR_ABORTED'));
    expect(getEventListeners(ac.signal, 'abort')).toHaveLength(0);
    open(c);
    await until(() => rt.report().depth === 0, 'depth 0');
    expect(rt.report()).toMatchObject({ aborted: 5, waiting: 0 });
  });
});

describe("ctx.signal and the worker's own clock", () => {
  // Mutant: ctx.signal without its own deadline timer (workers/task-context.ts): it would abort
  // only on the main thread's cancel, which a busy main thread does not send.
  it('aborts at the deadline while the main thread is busy', async () => {
    // How long this thread may block waiting: far beyond the 200 ms the worker needs, so that a
    // machine frozen for a while (both threads stop; the bound's clock does not) still passes.
    const BLOCK_MS = 60_000;
    const rt = await start({ threads: 1 });
    const c = control();
    // The deadline is far off in real time (a thread that started the task after a real 1 s one
    // skipped it, and the test waited for it forever); the worker arms ctx.signal's timer as if it
    // were 200 ms away. Whether the caller then hears of its deadline or of the result is not
    // what this test is about.
    const call = rt.run(gate(c, { awaitSignal: true, signalIn: 200 }), { deadlineMs: 600_000 });
    // Watched: a call refused at run() never starts, and the block below would wait out BLOCK_MS.
    await waitFor(c, STARTED, 1, call);
    // This thread blocks from here on (its deadline timer cannot run): bounded, not a timing check.
    const giveUpAt = Date.now() + BLOCK_MS;
    for (let left = BLOCK_MS; Atomics.load(c, SIGNALLED) === 0 && left > 0; left = giveUpAt - Date.now()) {
      Atomics.wait(c, SIGNALLED, 0, left);
    }
    expect(Atomics.load(c, SIGNALLED)).toBe(1);
    open(c);
    await call.catch(() => undefined);
  }, 120_000);
});

describe('ctx in the worker once a task has ended', () => {
  // Mutant: WorkerTaskContext#finish without clearLongTimeout (workers/task-context.ts): the
  // signal's deadline timer outlives the task and aborts its signal after it has completed.
  it("a completed task's signal never aborts at its deadline later", async () => {
    const rt = await start({ worker: CONTEXT_WORKER, threads: 1, admission: { requests: 4 } });
    const c = control();
    const input = { control: c.buffer as SharedArrayBuffer };
    // The deadline is far off in real time (a thread that started the task after a real 1 s one
    // skipped it); the worker arms ctx.signal's timer as if it were this close.
    const signalIn = 1_000;
    await expect(rt.run({ mode: 'listen', signalIn, ...input }, { deadlineMs: 600_000 })).resolves.toBe(
      'listening',
    );
    const at = Date.now() + signalIn; // no earlier than that task's deadline timer was due
    // The same thread waits past that deadline: a timer still armed for it fires first.
    await expect(rt.run({ mode: 'after', at, ...input })).resolves.toBe(0);
    expect(rt.report()).toMatchObject({ completed: 2, deadline: 0 });
  });

  // Mutant: WorkerTaskContext#watch re-arming after finish (`if (!this.#done)` dropped,
  // workers/task-context.ts): every task that read ctx.signal would leave a waiter on its
  // cancel word for good, woken (and re-armed) by every later notify of that slot.
  it('a task that read ctx.signal leaves no waiter on the cancel words', async () => {
    const rt = await start({ worker: CONTEXT_WORKER, threads: 1, admission: { requests: 4 } });
    const c = control();
    const input = { control: c.buffer as SharedArrayBuffer };
    for (let i = 0; i < 3; i++) await expect(rt.run({ mode: 'listen', ...input })).resolves.toBe('listening');
    await expect(rt.run({ mode: 'waiters', ...input })).resolves.toBe(0);
  });

  // Mutant: finish() not told of an armed wait (`#waiting = true` dropped, task-context.ts): a
  // task that read ctx.signal and turned the loop left its wait, and its ctx, on the cancel word
  // until that slot's next notify.
  it('a task that read ctx.signal and turned the loop leaves no waiter on the cancel words', async () => {
    const rt = await start({ worker: CONTEXT_WORKER, threads: 1, admission: { requests: 4 } });
    const input = { control: control().buffer as SharedArrayBuffer };
    for (let i = 0; i < 3; i++) await expect(rt.run({ mode: 'turned', ...input })).resolves.toBe('turned');
    await expect(rt.run({ mode: 'waiters', ...input })).resolves.toBe(0);
  });

  // A task's wait on its cancel word is woken (by finish's notify) only when this thread's event
  // loop turns, and piscina runs task after task without a turn while each ends in microtasks (a
  // synchronous or native handler): each such task that read ctx.signal left its context (and its
  // AbortController) held by a resolved wait, about 1.2 KB per call, for good.
  it('a task that read ctx.signal and ended without a turn of the loop leaves its ctx collectable', async () => {
    const rt = await start({ worker: CONTEXT_WORKER, threads: 1, admission: { requests: 4 } });
    const input = { control: control().buffer as SharedArrayBuffer };
    const tasks = 200;
    for (let i = 0; i < tasks; i++)
      await expect(rt.run({ mode: 'track', ...input })).resolves.toBe('tracked');
    await expect(rt.run({ mode: 'collected', ...input })).resolves.toBe(tasks);
  });

  // Mutant: isCancelled reading any non-zero word as a cancel (src/runtime/cancel-words.ts):
  // during its own task a ctx cannot tell, but one kept past its task would read the cancel of
  // the next claim in its slot as its own.
  it("a ctx kept past its task does not read the next task's cancel as its own", async () => {
    const rt = await start({ worker: CONTEXT_WORKER, threads: 1, admission: { requests: 1 } });
    const c = control();
    const input = { control: c.buffer as SharedArrayBuffer };
    await expect(rt.run({ mode: 'keep', ...input })).resolves.toBe('kept');
    const ac = new AbortController();
    const next = rt.run({ mode: 'stale', ...input }, { signal: ac.signal }); // the same (only) slot
    await waitFor(c, STARTED, 1, next);
    ac.abort();
    expect(await codeOf(next)).toBe('OMNI_ERR_ABORTED');
    await waitFor(c, CANCELLED);
    expect(Atomics.load(c, CANCELLED)).toBe(CANCELLED_FALSE);
  });
});

describe('a lost thread whose replacement comes up', () => {
  // Mutant: `watch.#up > needed` for `>=` (src/runtime/replacement-watch.ts): the n-th loss
  // would need n + 1 replacements, so one that did come up still fails the runtime at its due
  // time. The watch's timer runs on a fake clock: it is made due, not waited for.
  it("is covered: the runtime stays ready after the replacement's due time", async () => {
    const rt = await start({ threads: 1, startTimeoutMs: 30_000 });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      expect(await codeOf(rt.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
      // The only thread is the replacement: this call proves it came up.
      await expect(rt.run({ mode: 'echo', value: 'up' })).resolves.toBe('up');
      vi.advanceTimersByTime(30_000);
      expect(rt.state).toBe('ready');
      expect(rt.failure).toBeUndefined();
      await expect(rt.run({ mode: 'echo', value: 'still' })).resolves.toBe('still');
    } finally {
      vi.useRealTimers();
    }
  });

  // Each loss armed a startTimeoutMs timer that stayed armed after its replacement came up: a
  // thread crashing on every call left one per crash (holding the watch) for the whole timeout.
  it("clears the loss's due timer once its replacement is up", async () => {
    const rt = await start({ threads: 1, startTimeoutMs: 30_000 });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      for (let i = 0; i < 3; i++) {
        expect(await codeOf(rt.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
        // The only thread is the replacement: this call proves it came up.
        await expect(rt.run({ mode: 'echo', value: i })).resolves.toBe(i);
      }
      expect(vi.getTimerCount()).toBe(0);
      expect(rt.state).toBe('ready');
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('a forced close', () => {
  // Mutant: #shutdown running the close-hook rounds after a close timeout too
  // (`if (!guard.abandoned)` for `if (!guard.abandoned && clean)`, src/runtime/shutdown.ts): the round,
  // cut at once by the timeout that already fired, warns that the hooks did not finish.
  it('runs no close-hook round, so it warns of no hook cut short', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => {
      if (warning.name === 'OmniRuntimeWarning') warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    try {
      await forceClosedWithACallRunning();
      expect(warnings).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe.skipIf(!canBlockInRead)('a replacement stuck in a native call in its init', () => {
  // Mutant: the stuck-replacement callback without `this.abandon()` (src/runtime/pool-guard.ts,
  // `if (watch.serving <= 0)`): ReplacementWatch then only terminate()s the stuck thread, which
  // cannot stop inside a native call, so the queued call waits for that call to return.
  it('one thread: the runtime fails and gives a queued call back while the thread cannot stop yet', async () => {
    const pipe = new HeldPipe();
    const readEnd = pipe.readEnd;
    try {
      const inits = new Int32Array(new SharedArrayBuffer(4));
      // Out of reach of the first thread's start (a real 2 s one bounded start() too, which a
      // loaded machine did not always fit in): the replacement's own timeout, armed when the
      // thread is lost, runs on a fake clock and is made due once the replacement is stuck.
      const startTimeoutMs = 600_000;
      const rt = await start({
        worker: NATIVE_INIT_WORKER,
        threads: 1,
        admission: { requests: 4 },
        startTimeoutMs,
        workerData: { fd: readEnd, inits: inits.buffer },
      });
      let code: string | undefined;
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      try {
        expect(await codeOf(rt.run({ exit: true }))).toBe('OMNI_ERR_WORKER_EXITED');
        await waitFor(inits, 0, 2); // the replacement is in its init
        // Polled by turns of the loop: until() waits on setTimeout, which is faked here.
        for (const giveUpAt = Date.now() + 20_000; !blockedInRead(readEnd); ) {
          if (Date.now() > giveUpAt)
            throw new Error('timed out waiting for the replacement to block in read()');
          await new Promise((resolve) => setImmediate(resolve));
        }
        rt.run({}).then(
          () => {
            code = 'resolved';
          },
          (err: { code?: string }) => {
            code = err.code ?? 'none';
          },
        );
        vi.advanceTimersByTime(startTimeoutMs);
      } finally {
        vi.useRealTimers();
      }
      await until(() => rt.state === 'failed', 'the runtime to fail');
      await until(() => code !== undefined, 'the queued call to be given back', 10_000);
      expect(code).toBe('OMNI_ERR_WORKER_EXITED');
      expect(blockedInRead(readEnd)).toBe(true); // given back while the thread is still stuck
      expect(rt.report()).toMatchObject({ depth: 0, failed: 2 });
    } finally {
      pipe.close(); // lets the native call return, so the thread can stop
    }
  });
});
