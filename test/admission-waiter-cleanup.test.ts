/**
 * A waiter that leaves the queue (admitted, timed out or aborted) takes everything it set up with
 * it: its timer, its abort listener, and its place at the head, so the waiter behind it is let in
 * at once, with no release needed.
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BoundedAdmission, type Permit } from '../src/index.js';
import {
  admitted,
  rejection,
  track,
  turn,
  WORD_MODES,
  withOtherThread,
} from './fixtures/admission-interleave.js';

afterEach(() => {
  vi.useRealTimers();
});

describe.each(WORD_MODES)('a waiter that leaves (%s)', (_mode, units) => {
  it('cancels the timeout timer of a waiter that was admitted', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission, 1);
    const pending = admission.admit(1, { timeoutMs: 3_600_000 });
    expect(vi.getTimerCount()).toBe(1);
    holder.release();
    const permit = await pending;
    expect(vi.getTimerCount()).toBe(0);
    permit.release();
  });

  it('removes its abort listener from the signal once the waiter is admitted or times out', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission, 1);
    const signal = new AbortController().signal;
    const pending = admission.admit(1, { signal });
    expect(getEventListeners(signal, 'abort')).toHaveLength(1);
    holder.release();
    const permit = await pending;
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    const timedOut = admission.admit(1, { signal, timeoutMs: 1 });
    expect((await rejection(timedOut)).code).toBe('OMNI_ERR_TIMEOUT');
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    permit.release();
  });

  // Kills: waiting-room.ts wait() arming the timer, or adding the abort listener, after the
  // queue's first try: a waiter admitted by that very try had left already, so the timer (which
  // holds the event loop until it fires) or the listener stayed behind.
  it('leaves no timer and no listener when it is admitted by its first try', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { admission, otherThread } = withOtherThread({ requests: 1, units });
    const holder = admitted(admission, 1);
    const elsewhere = otherThread.admit(1); // sets WAITING
    // Room comes back, but the other instance's waiter takes it only on a later turn: this
    // admit() is refused 'queued' at first, queues, and is admitted by its own first try.
    holder.release();
    const signal = new AbortController().signal;
    const timers = vi.getTimerCount();
    const permit = track(admission.admit(1, { signal, timeoutMs: 3_600_000 }));
    await Promise.resolve();
    expect(permit.settled).toBe(true);
    expect(vi.getTimerCount()).toBe(timers);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    (permit.value as Permit).release();
    (await elsewhere).release();
  });
});

describe.each([
  ['with units', 10],
  ['with wide units (64-bit word)', 2 ** 40],
])('a head that gives up (%s)', (_mode, units) => {
  it.each(['abort', 'timeout'])(
    'lets the waiter behind it in at once on %s, with no release',
    async (how) => {
      // The head's timer is fake and fired by hand: a real 5 ms one fired before the check that
      // the waiter behind it still waits whenever the machine stalled for longer in between.
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const admission = new BoundedAdmission({ requests: 3, units });
      const holder = admitted(admission, 5);
      const controller = new AbortController();
      const head = admission.admit(units === 10 ? 8 : units! - 2, {
        signal: controller.signal,
        timeoutMs: how === 'timeout' ? 5 : undefined,
      });
      const behind = track(admission.admit(2));
      await turn();
      expect(behind.settled).toBe(false);
      if (how === 'abort') controller.abort();
      else vi.advanceTimersByTime(5);
      await rejection(head);
      await turn();
      expect(behind.settled).toBe(true);
      expect(admission.report()).toMatchObject({ depth: 2, units: 7, waiting: 0 });
      (behind.value as Permit).release();
      holder.release();
    },
  );
});
