/**
 * close() stops the ReplacementWatch with the startTimeoutMs bounds still armed (a lost thread's
 * replacement still in its init): they are cleared with it. Unref'd, each would still hold the
 * closed runtime until startTimeoutMs. A replacement that ends in its init takes its own start's
 * bound with it, while the runtime is open. Timers are counted on a fake clock (setTimeout only).
 */
import { afterEach, expect, it, vi } from 'vitest';
import { twoThreads } from './fixtures/replacement-harness.js';
import { waitFor } from './fixtures/runtime-control.js';
import { cleanupOnRealClock, codeOf } from './fixtures/runtime-harness.js';

afterEach(cleanupOnRealClock);

it('a replacement still in its init at close(): its bounds go with the watch', async () => {
  const loads = new SharedArrayBuffer(8);
  const rt = await twoThreads('hang', loads);
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  try {
    expect(await codeOf(rt.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
    await waitFor(new Int32Array(loads), 0, 3); // the replacement began its init, which hangs
    expect(vi.getTimerCount()).toBe(2); // its bounds: the loss's and its start's
    await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
    expect(vi.getTimerCount()).toBe(0); // close() stopped the watch, and cleared them with it
  } finally {
    vi.useRealTimers();
  }
});

it("a replacement that ends in its init: its start's bound goes at its exit, the loss's stays", async () => {
  const loads = new SharedArrayBuffer(8);
  let exits = 0;
  let bothExited: () => void = () => {};
  const exited = new Promise<void>((resolve) => {
    bothExited = resolve;
  });
  // The thread lost in its call, then its replacement (process.exit in init). The await below
  // resumes after every 'exit' listener of the replacement has run, the watch's among them.
  const threadEnds = {
    exited() {
      if (++exits === 2) bothExited();
    },
    stopped() {},
  };
  const rt = await twoThreads('exit', loads, threadEnds);
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  try {
    expect(await codeOf(rt.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
    await exited;
    // Left armed, the ended thread's bound would fire startTimeoutMs later, for nothing.
    expect(vi.getTimerCount()).toBe(1); // the loss's bound only: no replacement covers it yet
  } finally {
    vi.useRealTimers();
  }
});
