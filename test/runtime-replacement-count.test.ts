/**
 * The ReplacementWatch counts threads that serve: a replacement that dies before it comes up
 * was never one of them, and a thread lost after the runtime has failed still counts. With a
 * thread still serving, the pool is kept (its calls finish, close() drains); with none left it
 * is abandoned, so queued calls reject instead of waiting forever. startTimeoutMs is the
 * behaviour under test here.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { builtModuleUrl } from '../src/paths.js';
import { START_TIMEOUT_MS, twoThreads } from './fixtures/replacement-harness.js';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanupOnRealClock, codeOf, control, gate, start, until } from './fixtures/runtime-harness.js';

afterEach(cleanupOnRealClock);

describe('replacements that fail in init', () => {
  it('one that exits there is no lost serving thread: the other thread keeps its call', async () => {
    // The replacement's timeout is made due once the replacement has exited.
    const loads = new SharedArrayBuffer(8);
    const rt = await twoThreads('exit', loads);
    const c = control();
    const running = rt.run(gate(c, { value: 'kept' }));
    await waitFor(c, STARTED, 1, running);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      // The idle thread takes it and dies; its replacement exits in init.
      expect(await codeOf(rt.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
      await waitFor(new Int32Array(loads), 0, 3);
      vi.advanceTimersByTime(START_TIMEOUT_MS);
    } finally {
      vi.useRealTimers();
    }
    await until(() => rt.state === 'failed', 'the runtime to fail');
    open(c);
    await expect(running).resolves.toBe('kept');
    expect(rt.report()).toMatchObject({ depth: 0, completed: 1, failed: 1 });
    await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
  });

  it('the last serving thread lost after the runtime failed: queued calls are given back', async () => {
    const loads = new SharedArrayBuffer(8);
    const rt = await twoThreads('hang', loads);
    const c = control();
    const last = rt.run({ mode: 'block-exit', control: c.buffer as SharedArrayBuffer });
    await waitFor(c, STARTED, 1, last);
    // Each loss's timeout is armed (on the fake clock) when piscina removes the lost thread, in the
    // same turn as it rejects that thread's call: by the time the test hears of the call, that is.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let queued: Promise<string | undefined>;
    try {
      expect(await codeOf(rt.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
      await waitFor(new Int32Array(loads), 0, 3); // the replacement hangs in init
      queued = codeOf(rt.run({ mode: 'echo', value: 1 })); // no thread free to take it
      vi.advanceTimersByTime(START_TIMEOUT_MS);
      expect(rt.state).toBe('failed');
      open(c); // the serving thread exits too; no replacement comes up for it either
      expect(await codeOf(last)).toBe('OMNI_ERR_WORKER_EXITED');
      vi.advanceTimersByTime(START_TIMEOUT_MS);
    } finally {
      vi.useRealTimers();
    }
    expect(await queued).toBe('OMNI_ERR_WORKER_EXITED');
    expect(rt.report()).toMatchObject({ depth: 0, failed: 3 });
    await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
  });

  it('a replacement that never comes up: whenFailed() resolves with the failure', async () => {
    const loads = new SharedArrayBuffer(8);
    const rt = await twoThreads('hang', loads);
    const told = rt.whenFailed();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      expect(await codeOf(rt.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
      await waitFor(new Int32Array(loads), 0, 3); // the replacement hangs in init
      vi.advanceTimersByTime(START_TIMEOUT_MS); // its start timeout: the runtime fails
    } finally {
      vi.useRealTimers();
    }
    const err = await told;
    expect(err).toMatchObject({ code: 'OMNI_ERR_WORKER_EXITED' });
    expect(rt.failure).toBe(err);
    expect(rt.state).toBe('failed');
    await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
  });

  it('close() with a thread short: the close hooks run on the threads that serve, not waiting for the missing one', async () => {
    const loads = new SharedArrayBuffer(8);
    // Out of reach: were close() to wait for a close hook on the missing thread, the test times out.
    const rt = await twoThreads('hang', loads);
    expect(await codeOf(rt.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
    await until(() => Atomics.load(new Int32Array(loads), 0) === 3, 'the replacement to hang in init');
    await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
    expect(rt.report().state).toBe('stopped');
    expect(Atomics.load(new Int32Array(loads), 1)).toBe(1); // the one serving thread's hook ran
  });

  it('a replacement that comes up while the close hooks run still runs its own', async () => {
    const words = new SharedArrayBuffer(16);
    const w = new Int32Array(words);
    const rt = await start({
      worker: builtModuleUrl('test/fixtures/late-replacement-worker.js'),
      threads: 2,
      workerData: { words },
      // Out of reach (see START_TIMEOUT_MS): a real 10 s one bounded start() too. Nothing waits it out
      // (close() stops the replacement's timeout; a round waits for a ready message that comes).
      startTimeoutMs: START_TIMEOUT_MS,
    });
    expect(await codeOf(rt.run({ mode: 'exit' }))).toBe('OMNI_ERR_WORKER_EXITED');
    await until(() => Atomics.load(w, 0) === 3, 'the replacement to be in init');
    // The serving thread's hook lets the replacement come up, mid-teardown.
    await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
    expect(Atomics.load(w, 2)).toBe(3); // every init finished
    expect(Atomics.load(w, 1)).toBe(2); // both live threads ran their close hook, once each
  }, 60_000);
});
