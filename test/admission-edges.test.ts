/**
 * Edges of the admission core the other admission tests left unguarded (found by changing the
 * code on purpose and seeing which changes no test noticed, each named in its test's comment):
 * the order of a wake's SEQ bump and notify, of counting and flagging a waiter, of CLOSED and
 * its wake; a drain racing a release; the leak net's timer cohorts; the event loop held only
 * while something waits. Like test/admission-wake-races.test.ts, the interleaving tests stand in for
 * another thread by wrapping one Atomics call, so they depend on the protocol's current call
 * order; a lost wake-up shows as a waiter still pending after 1,000 event-loop turns.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WAITING_BIT_32, WAITING_BIT_64 } from '../src/admission/layout.js';
import { ROTATE_MS } from '../src/admission/leak-guard.js';
import { BoundedAdmission, type Permit } from '../src/index.js';
import { waiterCountedWhileFlagDown } from './fixtures/admission-flag-down.js';
import {
  admitted,
  deferFirstWaitAsync,
  expectWokenAlone,
  isStateWord,
  rejection,
  settles,
  track,
  turn,
  WORD_MODES,
  withOtherThread,
} from './fixtures/admission-interleave.js';

const gc = (globalThis as { gc?: () => void }).gc;

/** The state word's WAITING flag; the wide (64-bit) word is WORD_MODES' 2^40 unit ceiling. */
function waitingFlag(admission: BoundedAdmission, units: number | undefined): boolean {
  return units === 2 ** 40
    ? (Atomics.load(new BigUint64Array(admission.buffer, 0, 1), 0) & WAITING_BIT_64) !== 0n
    : (Atomics.load(new Int32Array(admission.buffer, 0, 1), 0) & WAITING_BIT_32) !== 0;
}

afterEach(() => {
  vi.useRealTimers();
});

describe.each(WORD_MODES)('admission core under mutation (%s)', (_mode, units) => {
  // Kills: bounded-admission.ts admit(), the `this.#countRefusal()` dropped in the branch for an
  // instance that has waiters and was closed by another instance.
  it('admit() counts its OMNI_ERR_CLOSED refusal on an instance whose own waiters are still queued', async () => {
    const { admission, otherThread } = withOtherThread({ requests: 1, units });
    const holder = admitted(admission, 1);
    const queued = admission.admit(1);
    const drained = otherThread.close(); // this instance's waiter learns of it only on its next wake
    const before = admission.report().rejected;
    const late = admission.admit(1);
    expect(admission.report().rejected).toBe(before + 1);
    expect((await rejection(late)).code).toBe('OMNI_ERR_CLOSED');
    expect((await rejection(queued)).code).toBe('OMNI_ERR_CLOSED');
    holder.release();
    await settles(drained);
  });

  // Kills: bounded-admission.ts #wake with Atomics.notify before the SEQ bump (a waiter that goes
  // to sleep between the two sleeps on the old value and is never woken).
  it('a release bumps SEQ before it notifies: a waiter falling asleep in between still wakes', async () => {
    const { admission, otherThread } = withOtherThread({ requests: 1, units });
    const claim = admitted(admission, 1).toClaim();
    const deferred = deferFirstWaitAsync(admission.buffer);
    let waiter: Promise<Permit>;
    try {
      waiter = admission.admit(1); // reads SEQ, tries, fails; its sleep is held back
    } finally {
      deferred.restore();
    }
    const realNotify = Atomics.notify;
    let fired = false;
    Atomics.notify = ((array: Int32Array, index: number, count?: number) => {
      const woken = realNotify(array, index, count);
      if (!fired && array.buffer === admission.buffer) {
        fired = true;
        deferred.resume(); // the waiter goes to sleep right after the releaser's notify
      }
      return woken;
    }) as typeof Atomics.notify;
    try {
      otherThread.releaseClaim(claim);
    } finally {
      Atomics.notify = realNotify;
    }
    expect(fired).toBe(true);
    await expectWokenAlone(admission, waiter);
  });

  // Kills: state-flags.ts clearWaiting with Atomics.notify before the SEQ bump.
  it('re-setting the WAITING flag bumps SEQ before it notifies: a waiter falling asleep in between still wakes', async () => {
    let resumed = false;
    const { admission, pending } = await waiterCountedWhileFlagDown(
      units,
      ({ admission, deferred, cleared }) => {
        const realNotify = Atomics.notify;
        Atomics.notify = ((array: Int32Array, index: number, count?: number) => {
          const woken = realNotify(array, index, count);
          if (cleared() && !resumed && array.buffer === admission.buffer) {
            resumed = true;
            deferred.resume(); // goes to sleep right after the re-set's notify
          }
          return woken;
        }) as typeof Atomics.notify;
        return () => {
          Atomics.notify = realNotify;
        };
      },
    );
    expect(resumed).toBe(true);
    await expectWokenAlone(admission, pending);
  });

  // Kills: waiting-room.ts wait() setting the WAITING flag before counting the waiter in WAITERS
  // (another instance's last waiter leaving in between clears the flag for good).
  it('a new waiter is counted before it sets the flag: another instance emptying its queue meanwhile keeps it', async () => {
    const { admission, otherThread } = withOtherThread({ requests: 1, units });
    const holder = admitted(admission, 1);
    const controller = new AbortController();
    const leaving = otherThread.admit(1, { signal: controller.signal });
    const realOr = Atomics.or;
    let armed = true;
    Atomics.or = ((array: Int32Array, index: number, value: number) => {
      const old = realOr(array, index, value);
      if (armed && array.buffer === admission.buffer) {
        armed = false;
        controller.abort(); // the other thread's last waiter leaves right after this write
      }
      return old;
    }) as typeof Atomics.or;
    let waiter: Promise<Permit>;
    try {
      waiter = admission.admit(1);
    } finally {
      Atomics.or = realOr;
    }
    expect(armed).toBe(false);
    expect((await rejection(leaving)).code).toBe('OMNI_ERR_ABORTED');
    // The bound is full, so tryAdmit would say 'requests' either way: read the flag itself.
    expect(waitingFlag(admission, units)).toBe(true);
    holder.release(); // must see the flag and wake the waiter
    await expectWokenAlone(admission, waiter);
  });

  // Kills: waiting-room.ts onChange reading SEQ for a drain after the depth check instead of
  // before (a release between the two is lost and close() never resolves).
  it("close()'s drain does not lose a release that lands between reading SEQ and reading the depth", async () => {
    const { admission, otherThread } = withOtherThread({ requests: 1, units });
    const claim = admitted(admission, 1).toClaim();
    const realLoad = Atomics.load;
    let fired = false;
    Atomics.load = ((array: Int32Array, index: number) => {
      const value = realLoad(array, index);
      if (!fired && isStateWord(array, index, admission.buffer)) {
        fired = true;
        otherThread.releaseClaim(claim); // right after the drain read the depth (1)
      }
      return value;
    }) as typeof Atomics.load;
    let drained: Promise<void>;
    try {
      drained = admission.close();
    } finally {
      Atomics.load = realLoad;
    }
    expect(fired).toBe(true);
    await settles(drained);
    expect(admission.report()).toMatchObject({ depth: 0 });
  });

  // Kills: bounded-admission.ts #wake calling onChange only for waiters (`waiting`, not
  // `interested`): a drain on the releasing instance then settles only a task later.
  it('a release on the closing instance settles its drain at once, without an event-loop turn', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const permit = admitted(admission, 1);
    const drained = track(admission.close());
    await turn();
    expect(drained.settled).toBe(false);
    permit.release();
    for (let i = 0; i < 10; i++) await Promise.resolve(); // microtasks only
    expect(drained.settled).toBe(true);
  });

  // Kills: waiting-room.ts #watch without its `#watching` guard (every failed try arms another
  // Atomics.waitAsync; the doc promises one per instance).
  it('keeps one pending Atomics.waitAsync per instance however often the head retries', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission, 1);
    const realWaitAsync = Atomics.waitAsync;
    let armed = 0;
    Atomics.waitAsync = ((array: Int32Array, index: number, value: number, timeout?: number) => {
      const result = realWaitAsync(array, index, value, timeout);
      if (array.buffer === admission.buffer && result.async) armed++;
      return result;
    }) as typeof Atomics.waitAsync;
    const head = admission.admit(1);
    const behind: Promise<Permit>[] = [];
    try {
      const controllers = Array.from({ length: 20 }, () => new AbortController());
      for (const controller of controllers) behind.push(admission.admit(1, { signal: controller.signal }));
      for (const controller of controllers) controller.abort(); // each leave makes the head retry
    } finally {
      Atomics.waitAsync = realWaitAsync;
    }
    for (const waiter of behind) expect((await rejection(waiter)).code).toBe('OMNI_ERR_ABORTED');
    expect(armed).toBe(1);
    holder.release();
    (await settles(head)).release();
  });

  // Kills: leak-guard.ts, the rotation timer opening a cohort without registering it (permits
  // leaked in any cohort opened by the timer are never found).
  it('reclaims a permit leaked in a cohort that the rotation timer opened', async () => {
    if (!gc) throw new Error('global.gc is missing: run with --expose-gc (see vitest.config.ts)');
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const admission = new BoundedAdmission({ requests: 1, units });
    admitted(admission, 1).release(); // the first cohort is used ...
    vi.advanceTimersByTime(ROTATE_MS); // ... so the timer opens the next one
    (() => {
      admitted(admission, 1); // dropped without release, in the timer's cohort
    })();
    vi.advanceTimersByTime(ROTATE_MS); // that cohort is rotated out too
    vi.useRealTimers();
    expect(admission.tryAdmit(0)).toMatchObject({ ok: false, reason: 'requests' });
    for (let i = 0; i < 200 && admission.report().leaked === 0; i++) {
      gc();
      await turn(); // finalizers run as tasks
    }
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, leaked: 1 });
    admitted(admission, 1).release();
  });

  // Kills: bounded-admission.ts refusalFor32 / refusalFor64 reading the counts with the WAITING
  // flag left in: a word that is the bare flag, nothing held, was refused as full ('requests').
  it("tryAdmit refuses 'queued', not 'requests', while another instance's waiter holds the flag over an empty word", async () => {
    const { admission, otherThread } = withOtherThread({ requests: 1, units });
    const holder = admitted(admission);
    const waiter = otherThread.admit();
    // The release sees WAITING and bumps SEQ; the other instance's waiter takes the room only on
    // a later turn, so until then the word is the flag alone.
    holder.release();
    expect(admission.report().depth).toBe(0);
    expect(admission.tryAdmit()).toEqual({ ok: false, reason: 'queued' });
    (await settles(waiter)).release();
  });

  // Kills: bounded-admission.ts #reserveWide with `fields > #requestLimit` instead of `>=`. A
  // full word with units above the request field hid it; costs of 0 leave exactly the limit.
  it("admits exactly `requests` of cost 0 and refuses the next with 'requests'", () => {
    const admission = new BoundedAdmission({ requests: 2, units });
    const permits = [admitted(admission, 0), admitted(admission, 0)];
    expect(admission.tryAdmit(0)).toEqual({ ok: false, reason: 'requests' });
    for (const permit of permits) permit.release();
    expect(admission.report()).toMatchObject({ depth: 0, rejected: 1 });
  });

  // Kills: state-flags.ts `closed` on the wide word with `> CLOSED_BIT_64` instead of `>=`:
  // only the stress test noticed (a closed word with nothing held is exactly the flag).
  it('reads closed once closed with nothing outstanding', async () => {
    const admission = new BoundedAdmission({ requests: 2, units });
    expect(admission.closed).toBe(false);
    await admission.close();
    expect(admission.closed).toBe(true);
  });

  // Kills: admit-options.ts invalidAdmitOptions with `timeoutMs > 0`: 0 is documented as valid
  // (any value >= 0); only the stress test's waiting mode passed 0.
  it('takes timeoutMs 0: admits when there is room, times out (counted) when full', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const permit = await admission.admit(1, { timeoutMs: 0 });
    expect((await rejection(admission.admit(1, { timeoutMs: 0 }))).code).toBe('OMNI_ERR_TIMEOUT');
    expect(admission.report()).toMatchObject({ depth: 1, rejected: 1, waiting: 0 });
    permit.release();
  });

  // Kills: waiting-room.ts #watch's callback without `this.#watching = false`: the instance
  // never arms its wait again, so only its first wake-up from another thread arrives (only the
  // stress test noticed).
  it('wakes the same instance again after its first wake-up from another instance', async () => {
    const { admission, otherThread } = withOtherThread({ requests: 1, units });
    const holder = admitted(admission);
    const first = otherThread.admit();
    const second = otherThread.admit();
    holder.release(); // wakes the other instance through SEQ only
    admission.releaseClaim((await settles(first)).toClaim()); // the second wake-up, the same way
    (await settles(second)).release();
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 0 });
  });

  // Kills: waiting-room.ts onChange() settling only the oldest pending drain: with three close()
  // calls pending, the release and the wake-up after it settled two, and the third never.
  it('resolves every close() made while work was outstanding once the last permit is released', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission);
    const closes = [admission.close(), admission.close(), admission.close()];
    const pending = closes.map((close) => track(close));
    await turn();
    expect(pending.map((p) => p.settled)).toEqual([false, false, false]);
    holder.release();
    for (const close of closes) await settles(close);
  });
});

describe('holding the event loop', () => {
  // Only ref'd timers are listed: the admission's hold while it has waiters or drains.
  const holds = (): number => process.getActiveResourcesInfo().filter((name) => name === 'Timeout').length;

  // Kills: waiting-room.ts onChange() settling drains without #unholdIfIdle (a process that
  // awaited close() would never exit), and drain() without #hold.
  it('holds the event loop only while waiters or drains are pending', async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    const before = holds();
    const holder = admitted(admission);
    const waiter = admission.admit();
    expect(holds()).toBe(before + 1);
    holder.release(); // admits the waiter at once, on this instance
    const permit = await waiter;
    expect(holds()).toBe(before);
    const drained = admission.close();
    expect(holds()).toBe(before + 1);
    permit.release();
    await drained;
    expect(holds()).toBe(before);
    await admission.close(); // nothing outstanding: settles at once and holds nothing
    expect(holds()).toBe(before);
  });
});
