/**
 * Runtime.start's `threadEnds`: the main thread is told of every thread's exit, however the
 * thread ended (its close hook ran, a close timeout terminated it in a call, it died mid-life of
 * process.exit() or an uncaught error, or a failed start stopped it), so it can give back what
 * the thread took that no close hook freed. Each test compares the ids reported with the
 * threadIds the worker's threads read themselves (thread-exit-worker.ts records them in shared
 * memory): each thread exactly once, and `stopped` after them all. Threads are ordered by shared
 * words and by the runtime's own promises, never by time.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Runtime, type RuntimeOptions, type ThreadEnds } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { blockedInRead, canBlockInRead, HeldPipe } from './fixtures/blocked-in-read.js';
import { CaughtTimer } from './fixtures/caught-timer.js';
import { WORDS } from './fixtures/late-exit-worker.js';
import { onDemandThread } from './fixtures/on-demand-thread.js';
import { START_TIMEOUT_MS } from './fixtures/replacement-harness.js';
import { STARTED, waitFor } from './fixtures/runtime-control.js';
import {
  cleanupOnRealClock,
  codeOf,
  control,
  gate,
  rejection,
  start,
  turns,
  until,
} from './fixtures/runtime-harness.js';
import {
  type End,
  expectEveryThreadThenStopped,
  recorder,
  STOPPED,
} from './fixtures/thread-ends-recorder.js';
import { COUNT, newIds, recordedIds, type WhoInput } from './fixtures/thread-exit-worker.js';

afterEach(cleanupOnRealClock);

const WORKER = builtModuleUrl('test/fixtures/thread-exit-worker.js');

/** Runtime options over the worker that records its threads' ids. */
function options(ends: ThreadEnds, ids: Int32Array, extra: Partial<RuntimeOptions> = {}): RuntimeOptions {
  return { worker: WORKER, threads: 2, workerData: { ids: ids.buffer }, threadEnds: ends, ...extra };
}

const who = (): Int32Array => new Int32Array(new SharedArrayBuffer(4));

describe('threadEnds: every thread the runtime saw is reported exited once, then stopped', () => {
  it('a clean close: each thread after its close hook, then stopped before close() resolves', async () => {
    const { log, ends } = recorder();
    const ids = newIds();
    const closed = newIds();
    // Whether the thread reported had run its close hook by then.
    const hookRan: boolean[] = [];
    const rt = await start(
      options(
        {
          exited: (id) => {
            hookRan.push(recordedIds(closed).includes(id));
            ends.exited(id);
          },
          stopped: () => ends.stopped(),
        },
        ids,
        { workerData: { ids: ids.buffer, closed: closed.buffer } },
      ),
    );
    expect(await rt.run({ mode: 'echo', value: 1 })).toBe(1);
    expect(log).toEqual([]);
    expect(await rt.close()).toEqual({ clean: true, abandoned: 0 });
    expect(recordedIds(ids)).toHaveLength(2);
    expectEveryThreadThenStopped(log, recordedIds(ids));
    expect(hookRan).toEqual([true, true]);
  });

  // Node tells every listener of every Worker the process creates ('worker'): those of another
  // pool are none of this runtime's threads.
  it("another runtime's threads, started and ended meanwhile: never reported to this one", async () => {
    const { log, ends } = recorder();
    const ids = newIds();
    const rt = await start(options(ends, ids));
    const second = await start(options(recorder().ends, newIds(), { threads: 1 }));
    expect(await second.run({ mode: 'echo', value: 1 })).toBe(1);
    expect(await second.close()).toEqual({ clean: true, abandoned: 0 });
    expect(log).toEqual([]);
    expect(await rt.close()).toEqual({ clean: true, abandoned: 0 });
    expectEveryThreadThenStopped(log, recordedIds(ids));
  });

  it.each([
    ['exit', 'process.exit() in a call'],
    ['uncaught', 'an uncaught error'],
  ] as const)(
    '%s (%s): the dead thread at its exit, its replacement and the rest at close',
    async (mode, _what) => {
      const { log, ends, exit } = recorder();
      const ids = newIds();
      const rt = await start(options(ends, ids));
      const dying = who();
      const input: WhoInput = { mode, who: dying.buffer as SharedArrayBuffer };
      expect(await codeOf(rt.run(input))).toBe('OMNI_ERR_WORKER_EXITED');
      const dead = Atomics.load(dying, 0);
      expect(recordedIds(ids)).toContain(dead);
      await exit(dead);
      // Told at the thread's exit, while the runtime serves on: that thread alone.
      expect(log).toEqual([dead]);
      expect(rt.state).toBe('ready');
      // Its replacement's init (the third) has begun: it is a thread of the runtime's too.
      await waitFor(ids, COUNT, 3);
      expect(await rt.run({ mode: 'echo', value: 2 })).toBe(2);
      expect(await rt.close()).toEqual({ clean: true, abandoned: 0 });
      expect(log[0]).toBe(dead);
      expectEveryThreadThenStopped(log, recordedIds(ids));
    },
  );

  it('one thread dying again and again: each replacement is reported too, at its own exit', async () => {
    const { log, ends, exit } = recorder();
    const ids = newIds();
    const rt = await start(options(ends, ids, { threads: 1 }));
    const dead: number[] = [];
    for (const mode of ['exit', 'uncaught', 'exit'] as const) {
      const dying = who();
      // One thread: each call runs on the replacement of the thread the one before ended.
      expect(await codeOf(rt.run({ mode, who: dying.buffer as SharedArrayBuffer }))).toBe(
        'OMNI_ERR_WORKER_EXITED',
      );
      dead.push(Atomics.load(dying, 0));
      await exit(dead.at(-1)!);
      expect(log).toEqual(dead);
    }
    expect(new Set(dead).size).toBe(3);
    expect(await rt.run({ mode: 'echo', value: 4 })).toBe(4);
    expect(await rt.close()).toEqual({ clean: true, abandoned: 0 });
    expect(recordedIds(ids)).toHaveLength(4);
    expectEveryThreadThenStopped(log, recordedIds(ids));
  });

  it('a replacement whose init throws (the runtime fails): reported at close like the rest', async () => {
    const { log, ends, exit } = recorder();
    const ids = newIds();
    const rt = await start(options(ends, ids, { threads: 1, workerData: { ids: ids.buffer, failAt: 2 } }));
    const dying = who();
    expect(await codeOf(rt.run({ mode: 'exit', who: dying.buffer as SharedArrayBuffer }))).toBe(
      'OMNI_ERR_WORKER_EXITED',
    );
    await exit(Atomics.load(dying, 0));
    expect(await codeOf(rt.run({ mode: 'echo', value: 1 }))).toBe('X_INIT');
    expect(rt.state).toBe('failed');
    await rt.close();
    expect(recordedIds(ids)).toHaveLength(2);
    expectEveryThreadThenStopped(log, recordedIds(ids));
  });

  // Mutant: the one process 'worker' listener let go when any runtime stops listening
  // (thread-starts.ts), not the last: a replacement that ended in its init went unreported.
  it("another runtime closed meanwhile: this one's replacement that ends in its init is reported", async () => {
    const { log, ends } = recorder();
    const ids = newIds();
    const rt = await start(options(ends, ids, { threads: 1, workerData: { ids: ids.buffer, exitAt: 2 } }));
    const other = await start(options(recorder().ends, newIds(), { threads: 1 }));
    expect(await other.close()).toEqual({ clean: true, abandoned: 0 });
    const dying = who();
    expect(await codeOf(rt.run({ mode: 'exit', who: dying.buffer as SharedArrayBuffer }))).toBe(
      'OMNI_ERR_WORKER_EXITED',
    );
    expect(await rt.whenFailed()).toHaveProperty('code', 'OMNI_ERR_WORKER_EXITED');
    const [first, replacement] = recordedIds(ids);
    expect(log).toEqual([first, replacement]);
    await rt.close();
    expect(log).toEqual([first, replacement, STOPPED]);
  });

  // Mutant: no exit watched from a thread's start (thread-exit-watch.ts's onThreadStart): a
  // replacement that ends in its init never comes up, and went unreported.
  it('a replacement that ends in its init (the runtime fails): reported at its exit', async () => {
    const { log, ends } = recorder();
    const ids = newIds();
    const rt = await start(options(ends, ids, { threads: 1, workerData: { ids: ids.buffer, exitAt: 2 } }));
    const dying = who();
    expect(await codeOf(rt.run({ mode: 'exit', who: dying.buffer as SharedArrayBuffer }))).toBe(
      'OMNI_ERR_WORKER_EXITED',
    );
    // No thread left, and piscina starts no other after one that ended while starting: the
    // runtime fails in the turn after the replacement's exit.
    expect(await rt.whenFailed()).toHaveProperty('code', 'OMNI_ERR_WORKER_EXITED');
    const [first, replacement] = recordedIds(ids);
    expect(first).toBe(Atomics.load(dying, 0));
    expect(log).toEqual([first, replacement]);
    await rt.close();
    expect(log).toEqual([first, replacement, STOPPED]);
  });

  // Mutant: no exit watched from a thread's start nor at a removal (thread-exit-watch.ts): a
  // thread piscina started for a queued call, never up, went unreported when close() ended it.
  it('a thread piscina starts for a queued call, terminated by close() in its init: reported too', async () => {
    const { rt, ids, log, second } = await onDemandThread('hold');
    // Its start bound stays on the fake clock, never due: close() is what ends it.
    vi.useRealTimers();
    expect(await rt.close({ timeoutMs: 0 })).toEqual({ clean: false, abandoned: 1 });
    expect(await second).toBe('OMNI_ERR_WORKER_EXITED');
    expect(recordedIds(ids)).toHaveLength(4);
    expectEveryThreadThenStopped(log, recordedIds(ids));
  });

  // Mutant: no exit watched from a thread's start (thread-exit-watch.ts's onThreadStart): a
  // thread piscina started for a queued call that ended in its own init was never seen alive
  // (piscina tells of a thread once it is up, and it is removed once it has exited): no `exited`.
  it('a thread piscina starts for a queued call that ends in its init: reported at its exit', async () => {
    const { rt, ids, log, second } = await onDemandThread('exit');
    vi.useRealTimers();
    // The call it was handed rejects at its exit, in a turn after the thread's 'exit' listeners.
    expect(await second).toBe('OMNI_ERR_WORKER_EXITED');
    expect(recordedIds(ids)).toHaveLength(4);
    expect(log).toContain(recordedIds(ids)[3]);
    expect(await rt.close()).toEqual({ clean: true, abandoned: 0 });
    expectEveryThreadThenStopped(log, recordedIds(ids));
  });

  it('a close timeout: the thread terminated in its call is reported too', async () => {
    const { log, ends } = recorder();
    const ids = newIds();
    const rt = await start(options(ends, ids, { admission: { requests: 2 } }));
    const stuck = control();
    const busy = who();
    const running = rt.run({ ...gate(stuck, { sync: true }), who: busy.buffer as SharedArrayBuffer });
    const call = codeOf(running);
    await waitFor(stuck, STARTED, 1, running);
    expect(await rt.close({ timeoutMs: 0 })).toEqual({ clean: false, abandoned: 1 });
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    expect(recordedIds(ids)).toContain(Atomics.load(busy, 0));
    expectEveryThreadThenStopped(log, recordedIds(ids));
  });

  it('a failed start (an init throws): every thread, then stopped, before start() rejects', async () => {
    const { log, ends } = recorder();
    const ids = newIds();
    const err = await rejection(
      Runtime.start(options(ends, ids, { workerData: { ids: ids.buffer, failAt: 2 } })),
    );
    expect(err.code).toBe('X_INIT');
    expect(recordedIds(ids)).toHaveLength(2);
    expectEveryThreadThenStopped(log, recordedIds(ids));
  });
});

describe.skipIf(!canBlockInRead)('threadEnds and a thread inside a native call', () => {
  it('reports a terminated thread only once its native call has returned', async () => {
    const pipe = new HeldPipe();
    const readEnd = pipe.readEnd;
    try {
      const { log, ends } = recorder();
      const rt = await start({
        worker: builtModuleUrl('test/fixtures/native-block-worker.js'),
        threads: 2,
        admission: { requests: 2 },
        workerData: { hooks: new SharedArrayBuffer(8) },
        threadEnds: ends,
      });
      const call = codeOf(rt.run({ fd: readEnd }));
      await until(() => blockedInRead(readEnd), 'the thread to block in read()');
      const closing = rt.close({ timeoutMs: 0 });
      expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
      // The idle thread ran its hook and exited; the other, terminated, is still in read().
      await until(() => log.length === 1, 'the idle thread to be reported');
      await turns();
      expect(blockedInRead(readEnd)).toBe(true);
      expect(log).toHaveLength(1);

      pipe.release();
      expect(await closing).toEqual({ clean: false, abandoned: 1 });
      expect(log).toHaveLength(3);
      expect(new Set(log.slice(0, 2)).size).toBe(2);
      expect(log[2]).toBe(STOPPED);
    } finally {
      pipe.close();
    }
  });
});

describe.skipIf(!canBlockInRead)('threadEnds and a thread that exits after close() gave up on it', () => {
  /**
   * Starts a one-thread runtime over late-exit-worker.ts (with `workerData`) whose thread dies
   * of an uncaught error, held in its exit by a sub-thread inside read(); `closing` then closes
   * it, and close() gives up waiting for the dying thread (startTimeoutMs). Checks that only the
   * dying thread's exit, after close() resolved, tells stopped, every other thread before it.
   * Resolves what `closing` resolved.
   */
  async function stoppedAtLateExit(
    workerData: { exitAt?: number },
    closing: (rt: Runtime) => Promise<unknown>,
  ): Promise<unknown> {
    const pipe = new HeldPipe();
    const readEnd = pipe.readEnd;
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => {
      if (warning.name === 'OmniRuntimeWarning') warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    const { log, ends } = recorder();
    // close()'s wait for the dying thread's exit (destroyPool) is armed with startTimeoutMs once
    // the replacement has exited, the one thread reported then: made due once armed. Out of
    // reach otherwise, as it bounds start() and the replacement's coming up too.
    const giveUp = new CaughtTimer(START_TIMEOUT_MS, () => log.length === 1);
    try {
      let stopped!: () => void;
      const told = new Promise<void>((resolve) => {
        stopped = resolve;
      });
      const counts = new Int32Array(new SharedArrayBuffer(4 * WORDS));
      const rt = await start({
        worker: builtModuleUrl('test/fixtures/late-exit-worker.js'),
        threads: 1,
        startTimeoutMs: START_TIMEOUT_MS,
        workerData: { counts: counts.buffer, ...workerData },
        threadEnds: {
          exited: (id) => ends.exited(id),
          stopped: () => {
            ends.stopped();
            stopped();
          },
        },
      });
      expect(await codeOf(rt.run({ die: readEnd }))).toBe('OMNI_ERR_WORKER_EXITED');
      const closed = closing(rt);
      await until(() => giveUp.caught, "close()'s wait for the dying thread's exit");
      giveUp.fire();
      const result = await closed;
      await turns(); // process 'warning' is emitted on a later tick
      expect(warnings.length).toBeGreaterThan(0); // close() gave up waiting for the dying thread
      expect(blockedInRead(readEnd)).toBe(true);
      // The replacement has exited; the dying thread has not, so stopped is not due.
      expect(log).toHaveLength(1);

      pipe.release();
      await told;
      expect(log).toHaveLength(3);
      expect(new Set(log.slice(0, 2)).size).toBe(2);
      expect(log[2]).toBe(STOPPED);
      return result;
    } finally {
      giveUp.restore();
      process.off('warning', onWarning);
      pipe.close();
    }
  }

  // Mutant: stopped only when destroyPool saw every thread exit (pool.ts's tellStopped): what
  // was left for stopped to give back was lost for good whenever close() gave up waiting.
  it('a clean close: tells stopped at its exit, after close() resolved', async () => {
    const result = await stoppedAtLateExit({}, async (rt) => {
      expect(await rt.run({})).toBe(1); // served by its replacement
      return rt.close();
    });
    expect(result).toEqual({ clean: true, abandoned: 0 });
  });

  // Mutant: a forced close's stopped told at once (shutdown.ts's #forced resolving true, not
  // destroyPool's answer): stopped gave back what the dying thread held while it still ran.
  it('a forced close (a call abandoned): tells stopped at its exit, after close() resolved', async () => {
    const result = await stoppedAtLateExit({}, async (rt) => {
      expect(await rt.run({})).toBe(1); // served by its replacement, which then takes this call
      const call = codeOf(rt.run({ hang: true }));
      const closed = await rt.close({ timeoutMs: 0 });
      expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
      return closed;
    });
    expect(result).toEqual({ clean: false, abandoned: 1 });
  });

  // Mutant: a lost pool's stopped told at once (shutdown.ts ignoring what guard.destroyed
  // resolved): the same, for a runtime that lost every thread.
  it('a runtime that lost every thread (its replacement ended in its init): tells stopped at its exit, after close() resolved', async () => {
    const result = await stoppedAtLateExit({ exitAt: 2 }, async (rt) => {
      expect(await rt.whenFailed()).toHaveProperty('code', 'OMNI_ERR_WORKER_EXITED');
      return rt.close();
    });
    expect(result).toEqual({ clean: true, abandoned: 0 });
  });
});

describe('threadEnds callbacks that call back into the runtime', () => {
  // A mid-life exit is told from the thread's 'exit' event, in the turn piscina removed it, and
  // stopped from inside close(): neither may leave close() waiting on itself, nor a call hanging.
  it('run() and close() from exited: the call served and drained, one close; from stopped: the same close, run() refused', async () => {
    const { log, ends, exit } = recorder();
    const ids = newIds();
    let rt!: Runtime;
    let served: Promise<unknown> | undefined;
    const closes: Promise<unknown>[] = [];
    let refused: Promise<string | undefined> | undefined;
    rt = await start(
      options(
        {
          exited: (id) => {
            ends.exited(id);
            served ??= rt.run({ mode: 'echo', value: 7 });
            closes.push(rt.close());
          },
          stopped: () => {
            ends.stopped();
            closes.push(rt.close());
            refused = codeOf(rt.run({ mode: 'echo', value: 8 }));
          },
        },
        ids,
      ),
    );
    const dying = who();
    expect(await codeOf(rt.run({ mode: 'exit', who: dying.buffer as SharedArrayBuffer }))).toBe(
      'OMNI_ERR_WORKER_EXITED',
    );
    await exit(Atomics.load(dying, 0));
    expect(await closes[0]).toEqual({ clean: true, abandoned: 0 });
    expect(await served).toBe(7);
    expect(await refused).toBe('OMNI_ERR_UNAVAILABLE');
    expect(new Set(closes).size).toBe(1);
    expect(closes).toHaveLength(log.length);
    // The dead thread's replacement may be terminated before its init began: reported all the same.
    expect(log.at(-1)).toBe(STOPPED);
    const exited = log.slice(0, -1);
    expect(new Set(exited).size).toBe(exited.length);
    expect(exited).toEqual(expect.arrayContaining(recordedIds(ids)));
  });
});

describe('threadEnds callbacks that throw', () => {
  /** Ends whose every call is logged and then throws (an Error, or for `stopped` a string). */
  function throwing() {
    const thrown: unknown[] = [];
    const log: End[] = [];
    const ends: ThreadEnds = {
      exited(threadId) {
        log.push(threadId);
        thrown.push(new Error('exited failed'));
        throw thrown.at(-1);
      },
      stopped() {
        log.push(STOPPED);
        thrown.push('not even an Error');
        throw thrown.at(-1);
      },
    };
    return { thrown, log, ends };
  }

  /** The OmniRuntimeWarnings emitted while `body` runs (and the turns after it). */
  async function warningsOf(body: () => Promise<void>): Promise<Error[]> {
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => {
      if (warning.name === 'OmniRuntimeWarning') warnings.push(warning);
    };
    process.on('warning', onWarning);
    try {
      await body();
      await turns(); // process 'warning' is emitted on a later tick
      return warnings;
    } finally {
      process.off('warning', onWarning);
    }
  }

  // Mutant: the calls unguarded (thread-ends.ts's guarded()): a throw in a thread's 'exit' event
  // skips the listeners after it, piscina's destroy() among them, and close() never resolved.
  it('are OmniRuntimeWarnings carrying what was thrown; every call is still made, close() resolves', async () => {
    const { thrown, log, ends } = throwing();
    const ids = newIds();
    const warnings = await warningsOf(async () => {
      const rt = await start(options(ends, ids));
      expect(await rt.close()).toEqual({ clean: true, abandoned: 0 });
    });
    expectEveryThreadThenStopped(log, recordedIds(ids));
    expect(thrown).toHaveLength(3);
    expect(warnings.map((w) => w.cause)).toEqual(thrown);
  });

  // Mutant: a returned promise ignored (thread-ends.ts's guarded()): an async callback's
  // rejection was unhandled, which ends a Node process by default (vitest reports it here).
  it('an async callback that rejects is such a warning too, not an unhandled rejection', async () => {
    const thrown: unknown[] = [];
    const log: End[] = [];
    const ids = newIds();
    const warnings = await warningsOf(async () => {
      const rt = await start(
        options(
          {
            async exited(threadId) {
              log.push(threadId);
              thrown.push(new Error('async exited failed'));
              throw thrown.at(-1);
            },
            async stopped() {
              log.push(STOPPED);
            },
          },
          ids,
        ),
      );
      expect(await rt.close()).toEqual({ clean: true, abandoned: 0 });
    });
    expectEveryThreadThenStopped(log, recordedIds(ids));
    expect(thrown).toHaveLength(2);
    expect(warnings.map((w) => w.cause)).toEqual(thrown);
  });

  // Mutant: only an object's `then` followed (thread-ends.ts's guarded()): a callback may return
  // a callable thenable (a function with a `then`), whose rejection was then never heard.
  it('a callback that returns a callable thenable that rejects is such a warning too', async () => {
    const thrown: unknown[] = [];
    const log: End[] = [];
    /** A function that is a thenable, rejecting with a fresh error (kept in `thrown`). */
    const rejectingThenable = (): unknown => {
      const error = new Error('thenable rejected');
      thrown.push(error);
      return Object.assign(() => {}, {
        // biome-ignore lint/suspicious/noThenProperty: the thenable under test
        then: (_resolved: unknown, rejected: (err: unknown) => void) => rejected(error),
      });
    };
    const ids = newIds();
    const warnings = await warningsOf(async () => {
      const rt = await start(
        options(
          {
            exited(threadId) {
              log.push(threadId);
              return rejectingThenable() as undefined;
            },
            stopped() {
              log.push(STOPPED);
              return rejectingThenable() as undefined;
            },
          },
          ids,
        ),
      );
      expect(await rt.close()).toEqual({ clean: true, abandoned: 0 });
    });
    expectEveryThreadThenStopped(log, recordedIds(ids));
    expect(thrown).toHaveLength(3);
    expect(warnings.map((w) => w.cause)).toEqual(thrown);
  });

  it("in a failed start: start() still rejects with the init's error, once every thread has exited", async () => {
    const { thrown, log, ends } = throwing();
    const ids = newIds();
    const warnings = await warningsOf(async () => {
      const started = Runtime.start(options(ends, ids, { workerData: { ids: ids.buffer, failAt: 1 } }));
      expect(await codeOf(started)).toBe('X_INIT');
    });
    expectEveryThreadThenStopped(log, recordedIds(ids));
    expect(warnings.map((w) => w.cause)).toEqual(thrown);
  });
});

describe('threadEnds option', () => {
  it.each([
    ['null', null],
    ['a number', 1],
    ['a function', () => {}],
    ['no functions', {}],
    ['no stopped', { exited() {} }],
    ['no exited', { stopped() {} }],
    ['a stopped that is no function', { exited() {}, stopped: true }],
  ])('%s is OMNI_ERR_INVALID_ARGUMENT before any thread starts', async (_what, threadEnds) => {
    const ids = newIds();
    const started = Runtime.start({ ...options(recorder().ends, ids), threadEnds } as RuntimeOptions);
    expect(await codeOf(started)).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(recordedIds(ids)).toEqual([]);
  });

  it('takes a class instance (its own fields are not keys to check), calls its methods on it, reads them once', async () => {
    class Ledger implements ThreadEnds {
      readonly log: End[] = [];
      #exits = 0;
      exited(threadId: number): void {
        this.#exits++;
        this.log.push(threadId);
      }
      stopped(): void {
        this.log.push(this.#exits);
      }
    }
    const ledger = new Ledger();
    const ids = newIds();
    const rt = await start(options(ledger, ids));
    // Read at start: replacing a method afterwards changes nothing.
    ledger.stopped = () => {
      throw new Error('read after start');
    };
    await rt.close();
    expect(ledger.log.slice(0, 2).sort()).toEqual(recordedIds(ids).sort());
    expect(ledger.log[2]).toBe(2);
  });
});
