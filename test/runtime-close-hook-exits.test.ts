/**
 * A close hook that ends its own thread: that thread never reaches the teardown barrier, so the
 * other threads are let go of it, and its replacement, up while the hooks run, gets a turn too.
 * startTimeoutMs is out of reach: waiting at the barrier for the thread that is gone (or counting
 * it among the threads that serve) would time the test out.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { cleanup, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

describe('a close hook that ends its thread', () => {
  it('close() resolves; the other thread and the replacement run their hooks', async () => {
    const words = new SharedArrayBuffer(12);
    const w = new Int32Array(words);
    const rt = await start({
      worker: builtModuleUrl('test/fixtures/close-exits-worker.js'),
      threads: 2,
      workerData: { words },
      startTimeoutMs: 600_000,
    });
    await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
    expect(rt.state).toBe('stopped');
    expect(Atomics.load(w, 0)).toBe(3); // two threads and the replacement ran init
    expect(Atomics.load(w, 1)).toBe(2); // each live one ran its close hook, once
  });
});
