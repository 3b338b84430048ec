/**
 * The serve command's failure watch, in-process on a fake clock. A runtime whose Runtime has
 * whenFailed() is only listened to: no interval is armed and nothing is read, and its failure
 * resolves the watch with no poll elapsing. Without it (or when it throws or rejects), the watch
 * reads the runtime's state at once and then every FAILURE_POLL_MS, resolves once that state is
 * 'failed' (a runtime only draining or stopped is not), survives a report() that throws, and
 * reads nothing after stop(). The command around it (drain, stderr line, exit 1) is serve-cli's.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FAILURE_POLL_MS, failureLine, watchFailure } from '../src/cli/failure-watch.js';
import { NativeError } from '../src/errors.js';
import type { RuntimeReport } from '../src/runtime.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** A runtime whose report() answers each read from `states` in turn (the last one repeats). */
function scripted(states: readonly (string | Error)[]) {
  let reads = 0;
  return {
    get reads() {
      return reads;
    },
    report(): RuntimeReport {
      const next = states[Math.min(reads++, states.length - 1)]!;
      if (next instanceof Error) throw next;
      return { state: next } as unknown as RuntimeReport;
    },
  };
}

/** Whether `promise` has settled, once the microtasks queued so far have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

describe('watchFailure', () => {
  it('a runtime failed already: resolves on the first read, before any poll', async () => {
    const runtime = scripted(['failed']);
    const watch = watchFailure(runtime);
    expect(runtime.reads).toBe(1);
    expect(await settled(watch.failed)).toBe(true);
  });

  it('draining and stopped are not failures; a later failed is noticed within one poll', async () => {
    const runtime = scripted(['ready', 'draining', 'stopped', 'failed']);
    const watch = watchFailure(runtime);
    await vi.advanceTimersByTimeAsync(2 * FAILURE_POLL_MS);
    expect(runtime.reads).toBe(3);
    expect(await settled(watch.failed)).toBe(false);
    await vi.advanceTimersByTimeAsync(FAILURE_POLL_MS);
    expect(await settled(watch.failed)).toBe(true);
    // Resolved: it reads no more.
    await vi.advanceTimersByTimeAsync(5 * FAILURE_POLL_MS);
    expect(runtime.reads).toBe(4);
  });

  it('a report() that throws is no failure and ends nothing: the next read still counts', async () => {
    const runtime = scripted([new Error('report broke'), 'failed']);
    const watch = watchFailure(runtime);
    expect(await settled(watch.failed)).toBe(false);
    await vi.advanceTimersByTimeAsync(FAILURE_POLL_MS);
    expect(await settled(watch.failed)).toBe(true);
  });

  it('stop() ends the reads, and failed never resolves after it', async () => {
    const runtime = scripted(['ready', 'failed']);
    const watch = watchFailure(runtime);
    watch.stop();
    await vi.advanceTimersByTimeAsync(5 * FAILURE_POLL_MS);
    expect(runtime.reads).toBe(1);
    expect(await settled(watch.failed)).toBe(false);
  });

  // A command that ends its work without stop() (or before it) must still let the process end.
  it('its poll never holds the process open', () => {
    vi.useRealTimers();
    const timers = (): number => process.getActiveResourcesInfo().filter((name) => name === 'Timeout').length;
    const before = timers();
    const watch = watchFailure(scripted(['ready']));
    try {
      expect(timers()).toBe(before);
    } finally {
      watch.stop();
    }
  });
});

/** A runtime whose Runtime offers whenFailed(): `fail` resolves it; report() says 'ready'. */
function announcing() {
  let fail: (error: Error) => void = () => {};
  const whenFailed = new Promise<Error>((resolve) => {
    fail = resolve;
  });
  const runtime = scripted(['ready']);
  return { served: Object.assign(runtime, { runtime: { whenFailed: () => whenFailed } }), fail };
}

describe('watchFailure with whenFailed()', () => {
  it('arms no interval and reads nothing; the failure resolves it with no poll elapsing', async () => {
    const { served, fail } = announcing();
    const watch = watchFailure(served);
    expect(vi.getTimerCount()).toBe(0);
    expect(served.reads).toBe(0);
    expect(await settled(watch.failed)).toBe(false);
    fail(new NativeError(7, 'sticky', true));
    expect(await settled(watch.failed)).toBe(true);
    expect(served.reads).toBe(0);
  });

  it('a runtime failed already: resolves at once', async () => {
    const { served, fail } = announcing();
    fail(new NativeError(7, 'sticky', true));
    expect(await settled(watchFailure(served).failed)).toBe(true);
  });

  it('stop() before the failure: failed never resolves', async () => {
    const { served, fail } = announcing();
    const watch = watchFailure(served);
    expect(vi.getTimerCount()).toBe(0);
    watch.stop();
    fail(new NativeError(7, 'sticky', true));
    expect(await settled(watch.failed)).toBe(false);
  });

  // A stopped watch must not start the poll a later rejection would have started: it would read
  // a runtime the command has moved on from, and resolve `failed` after stop().
  it('stop() before a hand-written whenFailed() rejects: no poll starts, nothing is read', async () => {
    let reject: (reason: Error) => void = () => {};
    const whenFailed = new Promise<never>((_, rejectIt) => {
      reject = rejectIt;
    });
    const runtime = Object.assign(scripted(['failed']), { runtime: { whenFailed: () => whenFailed } });
    const watch = watchFailure(runtime);
    watch.stop();
    reject(new Error('no event here'));
    expect(await settled(watch.failed)).toBe(false);
    expect(runtime.reads).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a hand-written whenFailed() that throws or rejects: the state is polled instead', async () => {
    for (const whenFailed of [
      () => {
        throw new Error('no event here');
      },
      () => Promise.reject(new Error('no event here')),
    ]) {
      const runtime = Object.assign(scripted(['ready', 'failed']), { runtime: { whenFailed } });
      const watch = watchFailure(runtime);
      expect(await settled(watch.failed)).toBe(false);
      expect(runtime.reads).toBe(1);
      await vi.advanceTimersByTimeAsync(FAILURE_POLL_MS);
      expect(await settled(watch.failed)).toBe(true);
      expect(vi.getTimerCount()).toBe(0);
    }
  });

  // watchFailure takes any thenable from a hand-written whenFailed(). One whose then() threw
  // rejected `failed` (the command's wait on it would throw, leaving the server listening), and
  // one that called its rejection callback twice armed two intervals, of which stop() cleared one.
  it('a hand-written thenable whose then() throws, or that rejects twice: polled once, stopped clean', async () => {
    const throwing = Object.assign(scripted(['ready', 'failed']), {
      runtime: {
        whenFailed: () => ({
          // biome-ignore lint/suspicious/noThenProperty: a hand-written thenable is the case under test
          then() {
            throw new Error('no event here');
          },
        }),
      },
    });
    const watch = watchFailure(throwing as unknown as Parameters<typeof watchFailure>[0]);
    let rejected = false;
    watch.failed.catch(() => {
      rejected = true;
    });
    await vi.advanceTimersByTimeAsync(FAILURE_POLL_MS);
    expect(rejected).toBe(false);
    expect(await settled(watch.failed)).toBe(true);
    expect(vi.getTimerCount()).toBe(0);

    const twice = Object.assign(scripted(['ready']), {
      runtime: {
        whenFailed: () => ({
          // biome-ignore lint/suspicious/noThenProperty: a hand-written thenable is the case under test
          then(_: unknown, onRejected: (reason: unknown) => void) {
            onRejected(new Error('no event here'));
            onRejected(new Error('again'));
          },
        }),
      },
    });
    const stopped = watchFailure(twice as unknown as Parameters<typeof watchFailure>[0]);
    await vi.advanceTimersByTimeAsync(0);
    expect(vi.getTimerCount()).toBe(1);
    stopped.stop();
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('failureLine', () => {
  it('one line, naming the failure code first', () => {
    const line = failureLine(new NativeError(7, 'sticky\nerror', true));
    expect(line).not.toContain('\n');
    expect(line).toMatch(/^omni-runtime serve: the runtime failed: OMNI_ERR_NATIVE: /);
  });

  it('a failure without a code or message (a hand-written runtime) still makes one line', () => {
    for (const failure of [undefined, null, {}, { code: 42, message: '' }]) {
      const line = failureLine(failure);
      expect(line).not.toContain('\n');
      expect(line).toMatch(/^omni-runtime serve: the runtime failed: [^:]+$/);
    }
  });
});
