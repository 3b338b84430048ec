/**
 * The serve command's failure watch, in-process on a fake clock: it reads the runtime's state
 * at once and then every FAILURE_POLL_MS, resolves once that state is 'failed' (a runtime only
 * draining or stopped is not), survives a report() that throws, and reads nothing after stop().
 * The command around it (drain, stderr line, exit 1) is serve-cli's.
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
