/**
 * close() and a thread that exits after piscina dropped it. A thread that dies of an uncaught
 * error leaves the pool at its 'error' event, but its 'exit' may come later; piscina's exit
 * handler then tops the pool back up to its thread count. When that 'exit' came after close()
 * had destroyed the pool, the new thread ran the worker's init and then idled for good (a
 * leaked native context, a process kept alive). The fixture's dying thread is held in its exit
 * by a sub-thread inside read() on a pipe the test writes to, so the late 'exit' is ordered
 * by the test, not by time; Linux (glibc) only.
 */
import { existsSync, readdirSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { blockedInRead, canBlockInRead, HeldPipe } from './fixtures/blocked-in-read.js';
import { HOOKS, INITS, TID, WORDS } from './fixtures/late-exit-worker.js';
import { WORDS as CHAOS_WORDS, type ChaosKind } from './fixtures/runtime-chaos-worker.js';
import { cleanup, codeOf, start, turns, until } from './fixtures/runtime-harness.js';

afterEach(cleanup);

/** Worker threads of this process (those of every runtime, and vitest's own if any). */
function workerThreads(): number {
  return (process.report.getReport() as { workers: unknown[] }).workers.length;
}

/** This process's Linux thread ids. */
function osThreads(): string[] {
  return readdirSync('/proc/self/task');
}

describe.skipIf(!canBlockInRead)('close() and a thread that exits late', () => {
  it('starts no thread once the pool is torn down, and resolves once the late thread has exited', async () => {
    const pipe = new HeldPipe();
    const readEnd = pipe.readEnd;
    try {
      const counts = new Int32Array(new SharedArrayBuffer(4 * WORDS));
      const base = workerThreads();
      const rt = await start({
        worker: builtModuleUrl('test/fixtures/late-exit-worker.js'),
        threads: 1,
        workerData: { counts: counts.buffer },
      });
      expect(await codeOf(rt.run({ die: readEnd }))).toBe('OMNI_ERR_WORKER_EXITED');
      // piscina started the replacement at the error; a call waits for it to come up.
      expect(await rt.run({})).toBe(1);
      expect(Atomics.load(counts, INITS)).toBe(2);
      // The dying thread is not listed: a thread that is stopping leaves the report. Awaited, not
      // read once: the error reached this thread before the dying thread called its exit, and a
      // busy machine may not have run it since.
      await until(() => workerThreads() === base + 1, 'the dying thread to leave the report');

      let closedBeforeExit: boolean | undefined;
      const closing = rt.close().then((result) => {
        closedBeforeExit ??= !pipe.released;
        return result;
      });
      // The replacement ran its hook and stopped; the dying thread is still held in its exit.
      await until(() => workerThreads() === base, 'the replacement to stop');
      await turns();
      expect(Atomics.load(counts, HOOKS)).toBe(1);
      expect(blockedInRead(readEnd)).toBe(true);
      const dying = `/proc/self/task/${Atomics.load(counts, TID)}`;
      expect(existsSync(dying)).toBe(true);
      const before = new Set(osThreads());

      pipe.release();
      expect(await closing).toEqual({ clean: true, abandoned: 0 });
      // Once the dying thread has ended, its 'exit' is queued to this thread: a few turns of the
      // loop deliver it. A thread started for it then is a new OS thread at once (its init
      // comes later).
      await until(() => !existsSync(dying), 'the dying thread to end');
      await turns();
      expect(
        osThreads().filter((tid) => !before.has(tid)),
        'threads started after close()',
      ).toEqual([]);
      expect(closedBeforeExit, 'close() resolved only once the late thread had exited').toBe(false);
      expect(Atomics.load(counts, INITS)).toBe(2);
      expect(workerThreads()).toBe(base);
    } finally {
      pipe.close();
    }
  });
});

describe('close() after threads were lost', () => {
  // Mutant: trackThreads without its `id === -1` check (src/runtime/pool.ts): a thread that ends
  // with process.exit() is removed inside its own 'exit' event, when its threadId reads -1 and it
  // is still in pool.threads; the 'exit' listener attached then never runs, so every close()
  // after such a loss waited out startTimeoutMs and warned.
  it.each([
    ['exit', 'process.exit() in a call'],
    ['uncaught', 'an uncaught error'],
  ] as const)(
    '%s (%s): resolves without a warning once the lost threads have exited',
    async (kind, _what) => {
      const warnings: string[] = [];
      const onWarning = (warning: Error): void => {
        if (warning.name === 'OmniRuntimeWarning') warnings.push(warning.message);
      };
      process.on('warning', onWarning);
      try {
        const words = new SharedArrayBuffer(4 * CHAOS_WORDS * 3);
        const rt = await start({
          worker: builtModuleUrl('test/fixtures/runtime-chaos-worker.js'),
          threads: 2,
          // Out of reach: it bounds start() and each replacement's coming up too, which a machine
          // frozen for longer (a 20 s one then) did not fit. A close that waited it out times the
          // test out; a warning would show one that gave up on the exits some other way.
          startTimeoutMs: 600_000,
        });
        const call = (k: ChaosKind, i: number): Promise<unknown> =>
          rt.run({ kind: k, words, at: CHAOS_WORDS * i, value: i, sync: false });
        // Two losses in a row: the second lands on a replacement or on the other first thread.
        expect(await codeOf(call(kind, 0))).toBe('OMNI_ERR_WORKER_EXITED');
        expect(await codeOf(call(kind, 1))).toBe('OMNI_ERR_WORKER_EXITED');
        // A call waits for a replacement to come up: the pool serves again.
        expect(await call('value', 2)).toBe(2);
        expect(await rt.close()).toEqual({ clean: true, abandoned: 0 });
        await turns(); // process 'warning' is emitted on a later tick
        expect(warnings).toEqual([]);
      } finally {
        process.off('warning', onWarning);
      }
    },
    60_000,
  );
});
