/**
 * threadEnds when Runtime.start() is called from a macrotask (a timer, an I/O callback, an
 * event handler) rather than from a promise continuation. Node tells of each new thread by
 * process 'worker' in a tick queued as the thread is made; from a macrotask those ticks run
 * before any promise continuation of start() does, so the exit watch must be listening by the
 * time start() returns its promise, or the pool's first threads go unwatched.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Runtime, RuntimeOptions, ThreadEnds } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { waitFor } from './fixtures/runtime-control.js';
import { cleanupOnRealClock, codeOf, start } from './fixtures/runtime-harness.js';
import { expectEveryThreadThenStopped, recorder, STOPPED } from './fixtures/thread-ends-recorder.js';
import { COUNT, newIds, recordedIds, type WhoInput } from './fixtures/thread-exit-worker.js';

afterEach(cleanupOnRealClock);

const WORKER = builtModuleUrl('test/fixtures/thread-exit-worker.js');

function options(ends: ThreadEnds, ids: Int32Array): RuntimeOptions {
  return { worker: WORKER, threads: 2, workerData: { ids: ids.buffer }, threadEnds: ends };
}

/** start(), called from a setImmediate callback: a macrotask, with no promise job running. */
function startInMacrotask(opts: RuntimeOptions): Promise<Runtime> {
  return new Promise((resolve, reject) => {
    setImmediate(() => {
      start(opts).then(resolve, reject);
    });
  });
}

describe('threadEnds for a runtime started from a macrotask', () => {
  it('a first thread that ends by process.exit() in a call is reported exited', async () => {
    const { log, ends } = recorder();
    const ids = newIds();
    const rt = await startInMacrotask(options(ends, ids));
    const dying = new Int32Array(new SharedArrayBuffer(4));
    const input: WhoInput = { mode: 'exit', who: dying.buffer as SharedArrayBuffer };
    expect(await codeOf(rt.run(input))).toBe('OMNI_ERR_WORKER_EXITED');
    // Its replacement's init (the third) has begun: it is a thread of the runtime's too.
    await waitFor(ids, COUNT, 3);
    expect(await rt.close()).toEqual({ clean: true, abandoned: 0 });
    expect(recordedIds(ids)).toContain(Atomics.load(dying, 0));
    expectEveryThreadThenStopped(log, recordedIds(ids));
  });

  it('a first thread that ends in its init is reported exited before start() rejects', async () => {
    const { log, ends } = recorder();
    const ids = newIds();
    const err = await startInMacrotask({
      ...options(ends, ids),
      workerData: { ids: ids.buffer, exitAt: 1 },
    }).then(
      () => undefined,
      (e: unknown) => e as { code?: string },
    );
    expect(err?.code).toBe('OMNI_ERR_WORKER_EXITED');
    // piscina may have started a replacement that was ended before its init began: reported
    // too, though it recorded no id, so the recorded ones are checked for, each once.
    const [dead, other] = recordedIds(ids);
    expect(log.filter((end) => end === dead)).toEqual([dead]);
    expect(log.filter((end) => end === other)).toEqual([other]);
    expect(log.at(-1)).toBe(STOPPED);
  });
});
