/**
 * A call queued while a lost thread's replacement is still in init can be handed by piscina to
 * that replacement (it offers queued tasks to threads that are not up yet). When the
 * replacement never comes up, the ReplacementWatch fails the runtime; the call must still end,
 * and close() still drain, though another thread serves.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { START_TIMEOUT_MS, twoThreads } from './fixtures/replacement-harness.js';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanupOnRealClock, codeOf, control, gate, until } from './fixtures/runtime-harness.js';

afterEach(cleanupOnRealClock);

describe('a call queued behind a replacement that never comes up', () => {
  it('ends, and close() drains, while the other thread still serves', async () => {
    const loads = new SharedArrayBuffer(8);
    const rt = await twoThreads('hang', loads); // every replacement hangs in init
    const c = control();
    const running = rt.run(gate(c, { value: 'kept' }));
    await waitFor(c, STARTED, 1, running);
    // The replacement's timeout, armed when the thread is lost, runs on a fake clock.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let queued: Promise<string | undefined>;
    try {
      expect(await codeOf(rt.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
      await waitFor(new Int32Array(loads), 0, 3); // the replacement hangs in init
      // No thread free: queued in piscina. When the serving thread frees, piscina offers it to
      // the replacement first (a thread not yet up has no call).
      queued = codeOf(rt.run({ mode: 'echo', value: 1 }));
      open(c);
      await expect(running).resolves.toBe('kept');
      vi.advanceTimersByTime(START_TIMEOUT_MS);
    } finally {
      vi.useRealTimers();
    }
    await until(() => rt.state === 'failed', 'the runtime to fail');
    expect(await queued).toBe('OMNI_ERR_WORKER_EXITED');
    await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
  });
});
