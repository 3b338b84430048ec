/**
 * close()'s timeout timer never outlives close(): one given while the close hooks run arms one
 * timer (brought forward, replaced, not added to), cleared once close() resolves; one given
 * after close() resolved arms none. A leaked one is a ref'd timer that keeps the caller's
 * process alive for as long as the timeout (a server's second signal: close({ timeoutMs })).
 * Timers are counted on a fake clock (setTimeout only: waitFor's interval stays real).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { INVOKED, open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, control, start } from './fixtures/runtime-harness.js';

afterEach(async () => {
  vi.useRealTimers();
  await cleanup();
});

const CLOSE_COUNT_WORKER = builtModuleUrl('test/fixtures/close-count-worker.js');

describe("close()'s timeout timer", () => {
  it('given while the hooks run: armed once, brought forward in place, cleared once close() resolves', async () => {
    const closed = control();
    const rt = await start({
      worker: CLOSE_COUNT_WORKER,
      threads: 1,
      workerData: { closed: closed.buffer, closeGate: true },
    });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    // Given before the hooks (the idle runtime drains at once): it bounded the wait for work
    // only, so it is cleared as the hooks begin, and a later one, even a longer one, applies.
    const closing = rt.close({ timeoutMs: 600_000 });
    await waitFor(closed, INVOKED, 1, closing);
    expect(vi.getTimerCount()).toBe(1); // the hooks' round, bounded by startTimeoutMs
    expect(rt.close({ timeoutMs: 700_000 })).toBe(closing);
    expect(vi.getTimerCount()).toBe(2);
    expect(rt.close({ timeoutMs: 300_000 })).toBe(closing); // brought forward: replaces it
    expect(vi.getTimerCount()).toBe(2);
    open(closed);
    expect(await closing).toEqual({ clean: true, abandoned: 0 });
    expect(Atomics.load(closed, STARTED)).toBe(1); // the hook ran to its end, not cut short
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a later, longer one never postpones it', async () => {
    const closed = control();
    const rt = await start({
      worker: CLOSE_COUNT_WORKER,
      threads: 1,
      startTimeoutMs: 3_600_000, // out of reach: only the close timeout ends the hook's wait
      workerData: { closed: closed.buffer, closeHangs: true },
    });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const closing = rt.close();
    await waitFor(closed, INVOKED, 1, closing);
    rt.close({ timeoutMs: 300_000 });
    rt.close({ timeoutMs: 600_000 });
    expect(vi.getTimerCount()).toBe(2); // the round's bound and the close timeout
    vi.advanceTimersByTime(300_000); // the close timeout fires: the hook that hangs is cut short
    expect(vi.getTimerCount()).toBe(1);
    expect(await closing).toEqual({ clean: true, abandoned: 0 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('given after close() resolved: arms nothing', async () => {
    const rt = await start({ threads: 1 });
    const closing = rt.close();
    expect(await closing).toEqual({ clean: true, abandoned: 0 });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    expect(rt.close({ timeoutMs: 600_000 })).toBe(closing);
    expect(vi.getTimerCount()).toBe(0);
  });
});
