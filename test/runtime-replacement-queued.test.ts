/**
 * A call queued while a lost thread's replacement is still in init can be handed by piscina to
 * that replacement (it offers queued tasks to threads that are not up yet). When the
 * replacement never comes up, the ReplacementWatch fails the runtime; the call must still end,
 * and close() still drain, though another thread serves.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, codeOf, control, gate, start, until } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const FAILS_WORKER = builtModuleUrl('test/fixtures/replacement-fails-worker.js');

describe('a call queued behind a replacement that never comes up', () => {
  it('ends, and close() drains, while the other thread still serves', async () => {
    const loads = new SharedArrayBuffer(8);
    const then = 'hang'; // every replacement hangs in init
    const rt = await start({
      worker: FAILS_WORKER,
      workerData: { loads, ok: 2, then },
      threads: 2,
      admission: { requests: 4 },
      startTimeoutMs: 2_000,
    });
    const c = control();
    const running = rt.run(gate(c, { value: 'kept' }));
    await waitFor(c, STARTED);
    expect(await codeOf(rt.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
    await until(() => Atomics.load(new Int32Array(loads), 0) === 3, 'the replacement to hang in init');
    // No thread free: queued in piscina. When the serving thread frees, piscina offers it to
    // the replacement first (a thread not yet up has no call).
    const queued = codeOf(rt.run({ mode: 'echo', value: 1 }));
    open(c);
    await expect(running).resolves.toBe('kept');
    await until(() => rt.state === 'failed', 'the runtime to fail');
    expect(await queued).toBe('OMNI_ERR_WORKER_EXITED');
    await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
  }, 20_000);
});
