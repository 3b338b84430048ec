/**
 * Wake-ups between instances (threads) that must never be lost, and queue order that must hold,
 * in the narrow windows of the protocol ("Memory ordering" in bounded-admission.ts). Another
 * thread is an attached instance in this thread; its timing is forced by wrapping one Atomics
 * call, so each test depends on the protocol's current call order. A lost wake-up shows as a
 * waiter still pending after 1,000 event-loop turns.
 */
import { describe, expect, it } from 'vitest';
import { BoundedAdmission, type Permit } from '../src/index.js';
import { waiterCountedWhileFlagDown } from './fixtures/admission-flag-down.js';
import {
  admitted,
  deferFirstWaitAsync,
  expectWokenAlone,
  interleave,
  rejection,
  settles,
  track,
  turn,
  WORD_MODES,
  withOtherThread,
} from './fixtures/admission-interleave.js';

describe.each(WORD_MODES)('wake-ups across instances (%s)', (_mode, units) => {
  it('does not lose a release that lands between a waiter reading SEQ and going to sleep', async () => {
    const { admission, otherThread } = withOtherThread({ requests: 1, units });
    const claim = admitted(admission, 1).toClaim();
    const deferred = deferFirstWaitAsync(admission.buffer);
    let waiter: Promise<Permit>;
    try {
      waiter = admission.admit(1); // reads SEQ, tries, fails; its sleep is held back
      otherThread.releaseClaim(claim); // sees WAITING: bumps SEQ and notifies, nobody asleep yet
    } finally {
      deferred.restore();
    }
    deferred.resume(); // sleeps with the stale SEQ value: must return at once
    await expectWokenAlone(admission, waiter);
  });

  it('wakes a waiter counted while the flag was down even if it was not yet asleep at the re-set', async () => {
    const { admission, deferred, pending } = await waiterCountedWhileFlagDown(units);
    deferred.resume();
    await expectWokenAlone(admission, pending);
  });

  it("does not lose a release that lands during the queue head's failed try", async () => {
    const { admission, otherThread } = withOtherThread({ requests: 1, units });
    const claim = admitted(admission, 1).toClaim();
    const realLoad = Atomics.load;
    let stateLoads = 0;
    let fired = false;
    Atomics.load = ((array: Int32Array, index: number) => {
      const value = realLoad(array, index);
      // Load 1: admit's own try; load 2: the queue head's try. Another thread releases right after it.
      if (
        !fired &&
        array.buffer === admission.buffer &&
        array.byteOffset === 0 &&
        index === 0 &&
        ++stateLoads === 2
      ) {
        fired = true;
        otherThread.releaseClaim(claim);
      }
      return value;
    }) as typeof Atomics.load;
    let waiter: Promise<Permit>;
    try {
      waiter = admission.admit(1);
    } finally {
      Atomics.load = realLoad;
    }
    expect(fired).toBe(true);
    await expectWokenAlone(admission, waiter);
  });
});

describe.each(WORD_MODES)('queue order and refusals across instances (%s)', (_mode, units) => {
  it("tryAdmit refuses 'closed', not 'queued', on an instance with waiters once another instance closed", async () => {
    const { admission, otherThread } = withOtherThread({ requests: 1, units });
    const holder = admitted(admission, 1);
    const waiter = otherThread.admit(1);
    const drained = admission.close();
    expect(otherThread.tryAdmit(1)).toEqual({ ok: false, reason: 'closed' });
    expect((await rejection(waiter)).code).toBe('OMNI_ERR_CLOSED');
    holder.release();
    await drained;
  });

  it("admit() does not barge past its own instance's waiter queued while the flag is briefly cleared", async () => {
    const { admission, otherThread } = withOtherThread({ requests: 1, units });
    const holder = admitted(admission, 1);
    const controller = new AbortController();
    const leaving = otherThread.admit(1, { signal: controller.signal });
    let first: Promise<Permit> | undefined;
    let late: ReturnType<typeof track<Permit>> | undefined;
    let armed = true;
    const restore = interleave(admission.buffer, {
      beforeClear: () => {
        armed = false;
        first = admission.admit(1); // queued here before the other thread's clear
      },
      afterClear: () => {
        holder.release(); // room comes back while the flag is down
        late = track(admission.admit(1)); // must queue behind `first`
      },
    });
    try {
      controller.abort();
    } finally {
      restore();
    }
    expect(armed).toBe(false);
    await rejection(leaving);
    const permit = await settles(first!);
    await turn();
    expect(late!.settled).toBe(false);
    permit.release();
    const second = await settles(
      Promise.resolve().then(async () => {
        for (let i = 0; i < 1000 && !late!.settled; i++) await turn();
        return late!.value as Permit;
      }),
    );
    expect(second.ok).toBe(true);
    second.release();
  });
});

/** Settles within a bounded number of event-loop turns (a wake-up is a task on this thread). */
describe.each([
  ['request-only', undefined],
  ['with units', 10],
  ['with wide units (64-bit word)', 2 ** 40],
])('waiting flag under forced interleavings (%s)', (_mode, units) => {
  it("wakes another thread's waiter when a release lands while the flag is briefly cleared", async () => {
    const { admission, otherThread } = withOtherThread({ requests: 1, units });
    const holder = admitted(admission, 1);
    const controller = new AbortController();
    const leaving = admission.admit(1, { signal: controller.signal });
    let pending: Promise<Permit> | undefined;
    const restore = interleave(admission.buffer, {
      // The last local waiter leaves (count 1 -> 0); before its clear, the other thread queues.
      beforeClear: () => {
        pending = otherThread.admit(1);
      },
      // A release lands after the clear: it sees no flag, so it wakes nobody itself.
      afterClear: () => holder.release(),
    });
    try {
      controller.abort();
    } finally {
      restore();
    }
    expect((await rejection(leaving)).code).toBe('OMNI_ERR_ABORTED');
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 1 });
    await expectWokenAlone(admission, pending!);
    admitted(admission, 1).release();
  });

  it("tryAdmit does not barge past its own instance's waiter queued while the flag is briefly cleared", async () => {
    const { admission, otherThread } = withOtherThread({ requests: 1, units });
    admitted(admission, 1).release(); // with the next, a cost twice in a row: a guess armed
    const holder = admitted(admission, 1);
    const controller = new AbortController();
    const leaving = otherThread.admit(1, { signal: controller.signal });
    let waiter: Promise<Permit> | undefined;
    const attempts: string[] = [];
    const restore = interleave(admission.buffer, {
      // The other thread's last waiter leaves (count 1 -> 0); before its clear, one queues here.
      beforeClear: () => {
        waiter = admission.admit(1);
      },
      // The clear has taken the flag down with that waiter queued; room comes back. (Another
      // thread's tryAdmit here is ordered before the waiter, which counts as queued once the flag
      // shows it again: see StateFlags.clearWaiting.)
      afterClear: () => {
        holder.release();
        const result = admission.tryAdmit(1);
        attempts.push(result.ok ? 'admitted' : result.reason);
        if (result.ok) result.release();
      },
    });
    try {
      controller.abort();
    } finally {
      restore();
    }
    expect(attempts).toEqual(['queued']);
    expect((await rejection(leaving)).code).toBe('OMNI_ERR_ABORTED');
    const permit = await settles(waiter!);
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 1 });
    permit.release();
  });

  it('does not leave the flag set (tryAdmit refusing queued) once every waiter has gone', async () => {
    const { admission, otherThread } = withOtherThread({ requests: 1, units });
    const holder = admitted(admission, 1);
    const controller = new AbortController();
    const leaving = admission.admit(1, { signal: controller.signal });
    const otherController = new AbortController();
    let otherWaiter: Promise<Permit> | undefined;
    const restore = interleave(admission.buffer, {
      beforeClear: () => {
        otherWaiter = otherThread.admit(1, { signal: otherController.signal });
      },
      // The other thread's waiter gives up right after this thread saw it counted.
      afterCountRead: () => otherController.abort(),
    });
    try {
      controller.abort();
    } finally {
      restore();
    }
    expect((await rejection(leaving)).code).toBe('OMNI_ERR_ABORTED');
    expect((await rejection(otherWaiter!)).code).toBe('OMNI_ERR_ABORTED');
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 0 });
    holder.release();
    // Nobody waits anywhere: both instances admit at once.
    const a = admission.tryAdmit(0);
    expect(a.ok ? 'admitted' : a.reason).toBe('admitted');
    (a as Permit).release();
    const b = otherThread.tryAdmit(0);
    expect(b.ok ? 'admitted' : b.reason).toBe('admitted');
    (b as Permit).release();
  });
});

/**
 * A waiter counted just before the clear (its own set found the flag still up) is left queued
 * with the flag cleared: clearWaiting must set it again, or every other instance's tryAdmit
 * barges past that waiter for as long as it waits. Unit bounds: with room on both counts, the
 * flag alone makes the refusal ('queued').
 */
describe.each([
  ['with units', 10],
  ['with wide units (64-bit word)', 2 ** 40],
])('waiting flag set again after a clear (%s)', (_mode, units) => {
  it('a waiter counted just before the clear keeps other instances from barging', async () => {
    const { admission, otherThread } = withOtherThread({ requests: 2, units });
    const third = BoundedAdmission.attach(admission.buffer);
    const holder = admitted(admission, units);
    const controller = new AbortController();
    const leaving = otherThread.admit(1, { signal: controller.signal });
    let waiter: Promise<Permit> | undefined;
    const restore = interleave(admission.buffer, {
      // The other thread's last waiter leaves (count 1 -> 0); before its clear, one queues here.
      beforeClear: () => {
        waiter = admission.admit(1);
      },
    });
    try {
      controller.abort();
    } finally {
      restore();
    }
    expect((await rejection(leaving)).code).toBe('OMNI_ERR_ABORTED');
    expect(admission.report().waiting).toBe(1);
    const result = third.tryAdmit(0); // room on both counts: only the queued waiter refuses it
    if (result.ok) result.release();
    expect(result.ok ? 'admitted' : result.reason).toBe('queued');
    holder.release();
    (await settles(waiter!)).release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, waiting: 0 });
  });
});
