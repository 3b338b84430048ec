/**
 * close({ timeoutMs }) and a thread blocked inside a native call. worker.terminate() cannot
 * interrupt a koffi call (the gated worker's Atomics.wait, which it can, does not show this):
 * the call is abandoned at the timeout (its caller rejected, its capacity given back), but the
 * thread stops, and close() resolves, only once the native call returns. The thread is seen
 * blocked in read() through /proc, so the test orders nothing by time; Linux (glibc) only.
 */
import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { blockedInRead, canBlockInRead, HeldPipe } from './fixtures/blocked-in-read.js';
import { cleanup, codeOf, start, turns, until } from './fixtures/runtime-harness.js';

afterEach(cleanup);

describe.skipIf(!canBlockInRead)('close() and a thread inside a native call', () => {
  it('abandons the call at the timeout; the threads stop, and close() resolves, when the call returns', async () => {
    const pipe = new HeldPipe();
    const readEnd = pipe.readEnd;
    try {
      const hooks = new Int32Array(new SharedArrayBuffer(8));
      const rt = await start({
        worker: builtModuleUrl('test/fixtures/native-block-worker.js'),
        threads: 2,
        admission: { requests: 2 },
        workerData: { hooks: hooks.buffer },
      });
      const call = codeOf(rt.run({ fd: readEnd }));
      await until(() => blockedInRead(readEnd), 'the thread to block in read()');

      let closedBeforeReturn: boolean | undefined;
      const closing = rt.close({ timeoutMs: 0 }).then((result) => {
        closedBeforeReturn ??= !pipe.released;
        return result;
      });
      // Abandoned at once: its caller hears of it and its capacity is back while the call runs.
      expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
      expect(rt.report()).toMatchObject({ depth: 0, running: 0 });
      // The idle thread runs its close hook and is then terminated: once its OS thread is gone,
      // close()'s hook rounds are over, so the call returning now cannot earn its thread a turn
      // (returning during a round would: see Shutdown's forced close).
      await until(
        () => Atomics.load(hooks, 0) === 1 && !existsSync(`/proc/self/task/${Atomics.load(hooks, 1)}`),
        'the idle thread to run its close hook and stop',
      );
      await turns();
      expect(blockedInRead(readEnd)).toBe(true);
      expect(closedBeforeReturn).toBeUndefined();

      pipe.release();
      expect(await closing).toEqual({ clean: false, abandoned: 1 });
      expect(closedBeforeReturn).toBe(false);
      expect(rt.state).toBe('stopped');
      // The idle thread ran its close hook before it stopped; the one inside the native call,
      // terminated without its hook, did not.
      expect(Atomics.load(hooks, 0)).toBe(1);
    } finally {
      pipe.close();
    }
  });
});
