/**
 * What a closed runtime leaves behind: nothing that keeps it reachable. A server that closes a
 * runtime (a reload, a test suite) must get its shared buffers (the claim window of the serial
 * scheduler alone is over 1 MiB) and threads' bookkeeping back once it drops the runtime.
 * vitest.config.ts starts the test processes with --expose-gc.
 */
import { getEventListeners } from 'node:events';
import { Piscina } from 'piscina';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LinearRuntime, Runtime, type RuntimeAdmissionOptions, type RuntimeOptions } from '../src/index.js';
import { FixtureFaults, loadNativeLibrary } from '../src/native/index.js';
import { serve } from '../src/serve/index.js';
import { blockedInRead, canBlockInRead, HeldPipe } from './fixtures/blocked-in-read.js';
import {
  expectGaveUpWhileHeld,
  HELD_START_TIMEOUT_MS,
  heldBlockingStart,
} from './fixtures/held-init-start.js';
import { activeResources, Collectable, fdCount, threadCount } from './fixtures/process-figures.js';
import { bump, newControl, open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { codeOf, GATED_WORKER, gate, until } from './fixtures/runtime-harness.js';
import { postFloats } from './fixtures/serve-client.js';
import { startGated } from './fixtures/serve-harness.js';
import { recorder, STOPPED } from './fixtures/thread-ends-recorder.js';

const gc = (globalThis as { gc?: () => void }).gc;
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Resolves once what `make` registers is collected; fails after `tries` collections. A
 * FinalizationRegistry, not a WeakRef: deref() would keep its target alive to the end of the job.
 */
async function collectedAfter(make: (register: (target: object) => void) => Promise<void>, tries = 50) {
  if (!gc) throw new Error('global.gc is missing: run with --expose-gc (see vitest.config.ts)');
  let collected = false;
  const registry = new FinalizationRegistry(() => {
    collected = true;
  });
  await make((target) => registry.register(target, 0));
  for (let i = 0; i < tries && !collected; i++) {
    gc();
    await turn();
  }
  return collected;
}

describe('a closed runtime', () => {
  // piscina's pool.close() arms a 30 s timer it never clears (its own close timeout); the pool's
  // event listeners hold the runtime, so every runtime closed cleanly stayed reachable, with its
  // buffers, for 30 s after its close() resolved.
  it.each([
    ['serial', undefined],
    ['bounded', { requests: 2 }],
    ['wait mode', { requests: 2, wait: true }],
  ] as const)('%s: can be collected once dropped', async (_mode, admission) => {
    const options: RuntimeOptions = { worker: GATED_WORKER, threads: 2, ...(admission ? { admission } : {}) };
    const collected = await collectedAfter(async (register) => {
      const rt = await Runtime.start(options);
      const ac = new AbortController();
      await expect(
        rt.run({ mode: 'echo', value: 1 }, { signal: ac.signal, deadlineMs: 60_000 }),
      ).resolves.toBe(1);
      await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
      register(rt);
    });
    expect(collected).toBe(true);
  });

  it('a LinearRuntime and its runtime behind a drained server can be collected', async () => {
    const collected = await collectedAfter(async (register) => {
      const gated = await startGated({ open: true });
      const handle = await serve(gated.lr, { port: 0 });
      const answer = await postFloats(handle.address, new Float32Array(4));
      expect(answer.status).toBe(200);
      await expect(handle.close()).resolves.toEqual({ clean: true, abandonedRequests: 0 });
      register(gated.lr.runtime);
    });
    expect(collected).toBe(true);
  });

  it('one closed by its timeout, its idle thread given its close hook, can be collected', async () => {
    const stuck = newControl();
    try {
      const collected = await collectedAfter(async (register) => {
        const rt = await Runtime.start({ worker: GATED_WORKER, threads: 2, admission: { requests: 2 } });
        const running = rt.run(gate(stuck, { sync: true }));
        const call = running.catch(() => {});
        await waitFor(stuck, STARTED, 1, running);
        await expect(rt.close({ timeoutMs: 0 })).resolves.toEqual({ clean: false, abandoned: 1 });
        await call;
        register(rt);
      });
      expect(collected).toBe(true);
    } finally {
      open(stuck);
    }
  });

  it('a LinearRuntime on the native worker can be collected', async () => {
    const collected = await collectedAfter(async (register) => {
      const lr = await LinearRuntime.start({ threads: 1, inFeatures: 4, outFeatures: 4, backend: 'fixture' });
      await expect(lr.run(new Float32Array(4))).resolves.toHaveLength(4);
      await lr.close();
      register(lr.runtime);
    });
    expect(collected).toBe(true);
  });
});

describe('a runtime still open', () => {
  // The set of calls a close timeout would abandon must let go of each call once its work ends:
  // a long-lived runtime would otherwise keep every call it ever ran (and what each holds).
  it('keeps nothing of a call that has ended', async () => {
    const rt = await Runtime.start({ worker: GATED_WORKER, threads: 1, admission: { requests: 2 } });
    try {
      const collected = await collectedAfter(async (register) => {
        // The call holds its signal until the call itself is dropped.
        const ac = new AbortController();
        await expect(rt.run({ mode: 'echo', value: 1 }, { signal: ac.signal })).resolves.toBe(1);
        register(ac.signal);
      });
      expect(collected).toBe(true);
    } finally {
      await rt.close();
    }
  });
});

/** Every count of work in flight: all zero once every call made has ended. */
function inFlight(rt: Runtime) {
  const { depth, units, waiting, queued, running } = rt.report();
  return { depth, units, waiting, queued, running };
}
const idle = { depth: 0, units: 0, waiting: 0, queued: 0, running: 0 };
const isIdle = (rt: Runtime): boolean => Object.values(inFlight(rt)).every((count) => count === 0);

/** The calls counted by how they ended: they add up to the calls made. */
function ended(rt: Runtime): number {
  const r = rt.report();
  return r.completed + r.failed + r.aborted + r.deadline + r.refused + r.invalid + r.unavailable;
}

/**
 * A service keeps one runtime for weeks: nothing may grow with the calls it has answered, however
 * each ended. The same mix runs N times and then 10N times; what the process holds after 10N
 * must be what it held after N (a fixed overhead is fine).
 */
describe('a runtime serving for long', () => {
  /**
   * One batch: nine calls at once (over a bound of 4: refusals, or waits), each ending its own
   * way. Every input and per-call signal is registered in
   * `kept`; the shared signal is followed by many calls and never aborts.
   */
  async function batch(rt: Runtime, shared: AbortSignal, kept: Collectable): Promise<number> {
    const calls: Promise<unknown>[] = [];
    const call = (input: object, options: Parameters<Runtime['run']>[1] = {}): void => {
      kept.register(input);
      if (options.signal && options.signal !== shared) kept.register(options.signal);
      calls.push(rt.run(input, options).catch(() => {}));
    };
    // First, so that it usually finds room: aborted while it runs, its caller leaves, and its
    // work ends later, when the gate opens.
    const running = newControl();
    const runningAc = new AbortController();
    call(gate(running), { signal: runningAc.signal });
    const runningCall = calls[0];
    const started = waitFor(running, STARTED);
    const abortedNow = new AbortController();
    const abortedSoon = new AbortController();
    call({ mode: 'echo', value: 1 }, { signal: shared });
    call({ mode: 'echo', value: 2 }, { signal: abortedNow.signal }); // before dispatch
    abortedNow.abort();
    call({ mode: 'echo', value: 3 }, { signal: shared, deadlineMs: 1 }); // queued, running or done
    call({ mode: 'echo', value: 4 }, { cost: 17 }); // above the unit ceiling (bounded modes)
    call({ mode: 'throw-coded' }, { signal: shared });
    call({ mode: 'unsendable', value: 5 });
    call({ mode: 'echo', value: 6 }, { signal: abortedSoon.signal, deadlineMs: 60_000 });
    queueMicrotask(() => abortedSoon.abort());
    call({ mode: 'echo', value: 7 }, { signal: new AbortController().signal }); // never aborts
    await Promise.race([started, runningCall]);
    runningAc.abort();
    open(running);
    // A refused gate call never starts: end the wait for it (waitFor holds a ref'd timer).
    bump(running, STARTED);
    await started;
    await Promise.all(calls);
    return calls.length;
  }

  async function figures(rt: Runtime, shared: AbortSignal, kept: Collectable) {
    // A call whose caller left first may still be running, and a thread's reply may still be on
    // its way after the worker gave the capacity back: both end on their own. A count that stays
    // up times this out.
    await until(() => isIdle(rt), 'every call to end');
    return {
      listeners: getEventListeners(shared, 'abort').length,
      inFlight: inFlight(rt),
      uncollected: await kept.uncollected(),
    };
  }

  it.each([
    ['bounded', { requests: 4, units: 16 }],
    ['wait mode', { requests: 4, units: 16, wait: true }],
    ['serial', undefined],
  ] as [string, RuntimeAdmissionOptions | undefined][])(
    '%s: calls ending every way leave nothing behind',
    async (_mode, admission) => {
      const rt = await Runtime.start({
        worker: GATED_WORKER,
        threads: 2,
        ...(admission ? { admission } : {}),
      });
      try {
        const shared = new AbortController();
        const kept = new Collectable();
        let made = 0;
        const rounds = async (n: number): Promise<void> => {
          for (let i = 0; i < n; i++) made += await batch(rt, shared.signal, kept);
        };
        await rounds(5); // warm: piscina's and the engine's own first-use allocations
        const nothing = { listeners: 0, inFlight: idle, uncollected: 0 };
        await rounds(20);
        expect(await figures(rt, shared.signal, kept)).toEqual(nothing);
        const atN = { threads: threadCount(), fds: fdCount(), resources: activeResources() };
        await rounds(200);
        expect(await figures(rt, shared.signal, kept)).toEqual(nothing);
        // Threads and descriptors a call opened may take a moment to be given back: bounded polls.
        await until(() => threadCount() <= atN.threads, `threads back to ${atN.threads}`);
        await until(() => fdCount() <= atN.fds, `file descriptors back to ${atN.fds}`);
        await until(() => activeResources() <= atN.resources, `active resources back to ${atN.resources}`);
        expect(ended(rt)).toBe(made);
      } finally {
        await rt.close();
      }
    },
  );

  /** Resolves once two calls run at once: each of the two threads is up. */
  async function bothThreadsServe(rt: Runtime): Promise<void> {
    const c = newControl();
    const calls = [rt.run(gate(c)), rt.run(gate(c))];
    await waitFor(c, STARTED, 2, Promise.race(calls));
    open(c);
    await Promise.all(calls);
  }

  // piscina replaces a thread that dies; the runtime watches each replacement (ReplacementWatch),
  // tracks each thread's exit (pool.ts) and reclaims the lost call's claim. 35 losses on one
  // runtime, in parts of ten (one test of all 35 was the file's second slowest on a loaded
  // machine), each held to the figures taken once five losses have warmed it: the last part
  // compares after all 35, as the one test did.
  describe('threads lost and replaced, again and again', () => {
    let rt: Runtime;
    const warmKept = new Collectable();
    let lost = 0;
    let atN = { threads: 0, fds: 0, resources: 0 };
    const crashes = async (n: number, kept: Collectable): Promise<void> => {
      for (let i = 0; i < n; i++, lost++) {
        const input = { mode: lost % 2 === 0 ? 'exit' : 'uncaught' } as const;
        kept.register(input);
        // The echo turns the thread's event loop (piscina's async atomics off), so a pending
        // uncaught error fires; whichever thread takes it, both calls end.
        const codes = await Promise.all([
          rt.run(input).catch((err: { code?: string }) => err.code),
          rt.run({ mode: 'echo', value: i }).catch((err: { code?: string }) => err.code),
        ]);
        expect(codes).toContain('OMNI_ERR_WORKER_EXITED');
      }
    };
    beforeAll(async () => {
      rt = await Runtime.start({ worker: GATED_WORKER, threads: 2, admission: { requests: 4 } });
      await crashes(2, warmKept);
      await crashes(3, warmKept);
      await until(() => isIdle(rt), 'every call to end');
      // Figures taken while a replacement is still starting would read a thread short.
      await bothThreadsServe(rt);
      atN = { threads: threadCount(), fds: fdCount(), resources: activeResources() };
    });
    afterAll(async () => {
      await rt?.close();
    });

    it('the first ones leave nothing behind', async () => {
      expect(await warmKept.uncollected()).toBe(0);
      expect(rt.state).toBe('ready');
    });

    it.each([1, 2, 3])('leave nothing behind (losses, part %i of 3)', async () => {
      const kept = new Collectable();
      await crashes(10, kept);
      await until(() => isIdle(rt), 'every call to end');
      await bothThreadsServe(rt);
      expect(await kept.uncollected()).toBe(0);
      expect(rt.state).toBe('ready');
      await until(() => threadCount() <= atN.threads, `threads back to ${atN.threads}`);
      await until(() => fdCount() <= atN.fds, `file descriptors back to ${atN.fds}`);
      await until(() => activeResources() <= atN.resources, `active resources back to ${atN.resources}`);
      await expect(rt.run({ mode: 'echo', value: 'still serving' })).resolves.toBe('still serving');
    });
  });
});

/** `n` runtimes in turn, each failed by a fatal native error and closed; each registered in `kept`. */
async function failAndReplace(n: number, kept: Collectable): Promise<void> {
  for (let i = 0; i < n; i++) {
    const lr = await LinearRuntime.start({
      backend: 'fixture',
      threads: 2,
      inFeatures: 8,
      outFeatures: 8,
      faultInjection: true,
      admission: { requests: 4, units: 64 },
    });
    kept.register(lr.runtime);
    const failed = lr.runtime.whenFailed();
    await lr.runtime.run({ inject: 'fatal' });
    // Whichever thread took the injection, the runtime fails once a call reaches it.
    while (lr.runtime.state === 'ready') await lr.run(new Float32Array(8)).catch(() => {});
    // Only the fields leave: vitest keeps what an assertion compared.
    const { code, fatal } = (await failed) as { code?: string; fatal?: boolean };
    expect({ code, fatal }).toEqual({ code: 'OMNI_ERR_NATIVE', fatal: true });
    await expect(lr.close()).resolves.toEqual({ clean: true, abandoned: 0 });
  }
}

/**
 * A supervisor (docs/runtime.md: whenFailed) closes a runtime that failed and starts another, for as long
 * as the service lives: each round must give back its threads, their descriptors and every byte
 * its native contexts held, the context the fatal error poisoned included.
 *
 * 22 two-thread starts in all, in tests of a few each (one test of all 22 took 48 s of its 60 s
 * limit on a loaded machine), every test held to one baseline: native bytes before the first
 * start, and the process's figures once two rounds have warmed it: the last part compares after
 * all 22, as the one test did.
 */
describe('runtimes failed by a native error and replaced', () => {
  let faults: FixtureFaults;
  const warmKept = new Collectable();
  let baseline = 0;
  let afterWarm = 0;
  let atN = { threads: 0, fds: 0, resources: 0 };
  beforeAll(async () => {
    faults = new FixtureFaults(loadNativeLibrary('fixture'));
    baseline = faults.liveBytes();
    await failAndReplace(2, warmKept);
    afterWarm = faults.liveBytes();
    atN = { threads: threadCount(), fds: fdCount(), resources: activeResources() };
  });

  it('the first ones leave no native memory and no runtime behind', async () => {
    expect(afterWarm).toBe(baseline);
    expect(await warmKept.uncollected()).toBe(0);
  });

  it.each([1, 2, 3, 4])(
    'leave no native memory, threads or descriptors behind (rounds, part %i of 4)',
    async () => {
      const kept = new Collectable();
      await failAndReplace(5, kept);
      expect(faults.liveBytes()).toBe(baseline);
      expect(await kept.uncollected()).toBe(0);
      await until(() => threadCount() <= atN.threads, `threads back to ${atN.threads}`);
      await until(() => fdCount() <= atN.fds, `file descriptors back to ${atN.fds}`);
      await until(() => activeResources() <= atN.resources, `active resources back to ${atN.resources}`);
    },
  );
});

describe('a failure kept after its runtime is dropped', () => {
  // A supervisor may keep each failure (a log, a history): the error must not keep the runtime
  // that failed. An error's captured stack frames hold their receivers until the stack is read.
  it('does not keep the runtime alive', async () => {
    const kept = new Collectable();
    // Its own function, so that no frame of the test holds the last runtime.
    const failOnce = async (): Promise<Error> => {
      const rt = await Runtime.start({ worker: GATED_WORKER });
      kept.register(rt);
      const failed = rt.whenFailed();
      // Checked, not swallowed: a call that failed otherwise leaves whenFailed() pending for good.
      expect(await codeOf(rt.run({ mode: 'fatal' }))).toBe('X_FATAL');
      await rt.close();
      return failed;
    };
    const failures: Error[] = [];
    for (let i = 0; i < 3; i++) failures.push(await failOnce());
    expect(failures.map((err) => (err as { fatal?: unknown }).fatal)).toEqual([true, true, true]);
    expect(await kept.uncollected()).toBe(0);
  });
});

describe.skipIf(!canBlockInRead)('a failed start() given up on a thread held in its init', () => {
  // start() rejects before the thread exits; its late exit tells threadEnds. Nothing of the
  // runtime it was starting (its pool, the shared buffers its threads were given) may stay
  // reachable after that exit: a supervisor retrying start() would pile them up.
  it("keeps nothing of the runtime once the thread's late exit is told", async () => {
    const pipe = new HeldPipe();
    const kept = new Collectable();
    try {
      await startGivenUpThenExited(pipe, kept);
    } finally {
      vi.restoreAllMocks();
      pipe.release();
    }
    await until(() => !blockedInRead(pipe.readEnd), 'the held thread to exit');
    pipe.close();
    expect(kept.registered).toBe(2);
    expect(await kept.uncollected()).toBe(0);
  });
});

/**
 * A start() given up on its one thread, held in read() on `pipe`; the pool it made, and the data
 * its threads were given, registered with `kept`; resolves once the thread's late exit has told
 * threadEnds `stopped`. Its own function, so that no frame of the test holds the pool.
 */
async function startGivenUpThenExited(pipe: HeldPipe, kept: Collectable): Promise<void> {
  const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
  const runs = vi.spyOn(Piscina.prototype, 'run');
  const { log, ends } = recorder();
  const held = heldBlockingStart(pipe, ends);
  try {
    expectGaveUpWhileHeld(await held.givenUp(), pipe, warning, HELD_START_TIMEOUT_MS);
    // The start's ping round ran on the pool: its first call's receiver.
    const pool = runs.mock.contexts[0] as Piscina;
    kept.register(pool);
    kept.register((pool.options as { workerData: object }).workerData);
  } finally {
    runs.mockRestore();
    pipe.release();
    await held.starting;
  }
  await until(() => log.includes(STOPPED), 'threadEnds to hear that every thread stopped');
}
