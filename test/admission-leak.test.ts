import { describe, expect, it, vi } from 'vitest';
import { SEQ_I32 } from '../src/admission/layout.js';
import { COHORT_SIZE, ROTATE_MS } from '../src/admission/leak-guard.js';
import { BoundedAdmission, type Claim, type Permit } from '../src/index.js';
import { admitted, turn } from './fixtures/admission-interleave.js';
import { collectUntil } from './fixtures/collect-until.js';

/**
 * The leak safety net: a permit dropped without release is given back once its whole cohort
 * (COHORT_SIZE consecutive permits) is unreachable and the GC has run, and counted in
 * report().leaked. vitest.config.ts starts the test processes with --expose-gc.
 */

const gc = (globalThis as { gc?: () => void }).gc;

/**
 * Issues one whole cohort: the first permit is dropped without release, one is moved into a
 * claim (returned), the rest are released. Nothing here stays reachable once it returns.
 */
function issueCohortWithOneLeak(admission: BoundedAdmission, leakedCost: number): Claim {
  admitted(admission, leakedCost); // dropped on the floor
  const claim = admitted(admission, 2).toClaim();
  for (let i = 2; i < COHORT_SIZE; i++) admitted(admission, 1).release();
  return claim;
}

describe('leak safety net', () => {
  it('has global.gc', () => {
    expect(typeof gc).toBe('function');
  });

  describe.each([
    ['request-only', undefined],
    ['with units', 1000],
    ['with wide units (64-bit word)', 2 ** 40],
  ])('%s', (_mode, units) => {
    it('reclaims a permit dropped without release once its cohort is collected', async () => {
      const admission = new BoundedAdmission({ requests: 4, units });
      const claim = issueCohortWithOneLeak(admission, 7);
      expect(admission.report()).toMatchObject({
        depth: 2,
        units: units === undefined ? 0 : 9,
        leaked: 0,
      });
      await collectUntil(() => admission.report().leaked > 0);
      // Exactly the dropped permit: released ones and the one moved into a claim are not leaks.
      expect(admission.report()).toMatchObject({
        depth: 1,
        units: units === undefined ? 0 : 2,
        leaked: 1,
        rejected: 0,
        waiting: 0,
      });
      // The claim is untouched by the safety net and still releases exactly once.
      admission.releaseClaim(claim);
      expect(admission.reclaim(claim)).toBe(false);
      expect(admission.report()).toMatchObject({ depth: 0, units: 0, leaked: 1 });
      // The reclaimed capacity is really free: the whole bound can be taken again.
      const all = [1, 2, 3, 4].map(() => admitted(admission, units === undefined ? 1 : 250));
      expect(admission.tryAdmit(0)).toEqual({ ok: false, reason: 'requests' });
      for (const p of all) p.release();
      expect(admission.report()).toMatchObject({ depth: 0, units: 0, leaked: 1 });
    });

    it('never reclaims a permit that is still reachable', async () => {
      const admission = new BoundedAdmission({ requests: 4, units });
      // A full cohort whose only live member is `kept`.
      const kept = admitted(admission, 5);
      for (let i = 1; i < COHORT_SIZE; i++) admitted(admission, 1).release();
      // A second cohort with one dropped permit: its reclamation proves the GC ran.
      const claim = issueCohortWithOneLeak(admission, 3);
      await collectUntil(() => admission.report().leaked > 0);
      for (let i = 0; i < 5; i++) {
        gc?.();
        await turn();
      }
      expect(admission.report()).toMatchObject({
        depth: 2, // kept + the claim
        units: units === undefined ? 0 : 7,
        leaked: 1,
      });
      expect(kept.released).toBe(false);
      kept.release();
      admission.releaseClaim(claim);
      expect(admission.report()).toMatchObject({ depth: 0, units: 0, leaked: 1 });
    });
  });

  it('hands reclaimed capacity to a queued waiter', async () => {
    const admission = new BoundedAdmission({ requests: 2, units: 30 });
    const dropCohort = (): void => {
      admitted(admission, 20); // dropped
      for (let i = 1; i < COHORT_SIZE; i++) admitted(admission, 1).release();
    };
    dropCohort();
    const other = admitted(admission, 10);
    expect(admission.report()).toMatchObject({ depth: 2, units: 30 });
    const waiter = admission.admit(11);
    expect(admission.report()).toMatchObject({ waiting: 1 });
    await collectUntil(() => admission.report().leaked > 0);
    const permit = await waiter;
    expect(admission.report()).toMatchObject({ depth: 2, units: 21, waiting: 0, leaked: 1 });
    permit.release();
    other.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, leaked: 1 });
  });

  it('finds leaks that fill the whole bound, although no further permit is issued', async () => {
    // Without the periodic cohort rotation the leaked permits would sit in the current cohort,
    // which the admission itself keeps alive: the admission would stay full forever. The rotation
    // timer is faked and moved by hand: a real one, waited for against a wall-clock deadline,
    // failed the test when the machine stalled past that deadline before the timer fired.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const admission = new BoundedAdmission({ requests: 2 });
      (() => {
        admitted(admission, 1);
        admitted(admission, 1);
      })();
      expect(admission.tryAdmit(1)).toMatchObject({ ok: false, reason: 'requests' });
      vi.advanceTimersByTime(ROTATE_MS);
      await collectUntil(() => admission.report().leaked >= 2);
      expect(admission.report()).toMatchObject({ depth: 0, leaked: 2 });
      admitted(admission, 1).release();
    } finally {
      vi.useRealTimers();
    }
  });

  // The rotation timer's callback shared its closure context with the FinalizationRegistry's
  // callback, whose onLeak holds the admission: the timer (held by the event loop) kept every
  // admission ever made alive, with its buffer (up to 1 MiB of claim slots), and firing forever.
  it('lets a dropped admission be collected', async () => {
    let collected = false;
    const registry = new FinalizationRegistry(() => {
      collected = true;
    });
    (() => {
      registry.register(new BoundedAdmission({ requests: 1, units: 10 }), 0);
    })();
    await collectUntil(() => collected);
  });

  // A waiter that gives up leaves the instance's one Atomics.waitAsync pending, and a release
  // with nobody waiting notifies nobody: its continuation held the room, and through it the
  // admission (buffer and rotation timer included), for good.
  it.each(['aborted', 'timed out'] as const)(
    'lets a dropped admission be collected after a waiter %s',
    async (how) => {
      let collected = false;
      const registry = new FinalizationRegistry(() => {
        collected = true;
      });
      // Only the code leaves the scope: vitest keeps an asserted error, whose stack holds the room.
      const code = await (async () => {
        const admission = new BoundedAdmission({ requests: 1 });
        const held = admitted(admission, 1);
        const ac = new AbortController();
        const waiter = admission.admit(1, how === 'aborted' ? { signal: ac.signal } : { timeoutMs: 0 });
        ac.abort();
        const gaveUp = await waiter.then(
          () => 'admitted',
          (err: { code?: string }) => err.code,
        );
        held.release();
        registry.register(admission, 0);
        return admission.report().waiting === 0 ? gaveUp : 'still waiting';
      })();
      expect(code).toBe(how === 'aborted' ? 'OMNI_ERR_ABORTED' : 'OMNI_ERR_TIMEOUT');
      await collectUntil(() => collected);
    },
  );

  // The room collected above still left its one Atomics.waitAsync pending: V8 keeps a wait, its
  // promise and continuation, in its wait list until a notify on the word, so every admission
  // dropped so added one for good (measured: the heap after GC grew ~2.4 MB per 6,000 of them).
  it('leaves no wait pending on its buffer once a dropped admission is collected', async () => {
    let collected = false;
    const registry = new FinalizationRegistry(() => {
      collected = true;
    });
    // The buffer outlives the admission here only so that the test can read its word.
    const words = await (async () => {
      const admission = new BoundedAdmission({ requests: 1 });
      const held = admitted(admission, 1);
      // It gives up while the room watches the word; the release after it notifies nobody.
      const gaveUp = await admission.admit(1, { timeoutMs: 0 }).then(
        () => 'admitted',
        (err: { code?: string }) => err.code,
      );
      held.release();
      registry.register(admission, 0);
      return gaveUp === 'OMNI_ERR_TIMEOUT' ? new Int32Array(admission.buffer) : undefined;
    })();
    if (words === undefined) throw new Error('the waiter did not time out');
    const seq = Atomics.load(words, SEQ_I32);
    await collectUntil(() => collected);
    // Woken once the room is gone, as a release wakes it: a waiter still there is a wait kept.
    for (let i = 0; i < 50 && Atomics.load(words, SEQ_I32) === seq; i++) {
      gc!();
      await turn();
    }
    expect({
      woken: Atomics.load(words, SEQ_I32) !== seq,
      stillWaiting: Atomics.notify(words, SEQ_I32),
    }).toEqual({
      woken: true,
      stillWaiting: 0,
    });
  });

  // The other side of the weak hold above: a caller may keep only admit()'s promise while it
  // waits for another thread's release; the room must then still be there to admit it.
  it('still admits a waiter whose admission only it awaits', async () => {
    if (!gc) throw new Error('global.gc is missing: run with --expose-gc (see vitest.config.ts)');
    let collected = false;
    const registry = new FinalizationRegistry(() => {
      collected = true;
    });
    const elsewhere = BoundedAdmission.attach(new BoundedAdmission({ requests: 1 }).buffer);
    const held = admitted(elsewhere, 1);
    const waiting = (() => {
      const admission = BoundedAdmission.attach(elsewhere.buffer);
      registry.register(admission, 0);
      return admission.admit(1).then((permit) => {
        permit.release();
        return 'admitted';
      });
    })();
    for (let i = 0; i < 20; i++) {
      gc();
      await turn();
    }
    expect(collected).toBe(false);
    held.release(); // wakes the waiting instance through the shared word, as another thread would
    await expect(waiting).resolves.toBe('admitted');
  });

  // Kills also: leak-guard.ts's rotation timer going on once its guard is gone (no clearInterval):
  // an unref'd interval, so nothing hangs, but every dropped admission left one firing forever.
  it('stops its rotation timer once the admission is collected', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const before = vi.getTimerCount();
      (() => {
        new BoundedAdmission({ requests: 1 }); // dropped at once
      })();
      expect(vi.getTimerCount()).toBe(before + 1);
      if (!gc) throw new Error('global.gc is missing: run with --expose-gc (see vitest.config.ts)');
      for (let i = 0; i < 200 && vi.getTimerCount() !== before; i++) {
        gc();
        await turn();
        vi.advanceTimersByTime(ROTATE_MS);
        // The timer's deref() keeps its target alive to the end of this task: collect in the next.
        await turn();
      }
      expect(vi.getTimerCount()).toBe(before);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('docs/limits.md: "its whole cohort (up to 1,024 permits, closed at least every second)"', () => {
  it('a cohort is 1,024 consecutive permits: a dropped first one waits for the 1,024th, not the 1,025th', async () => {
    // Rotation faked and never moved: only the count closes a cohort here.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const admission = new BoundedAdmission({ requests: 4, units: 1000 });
      let kept: Permit | undefined = (() => {
        admitted(admission, 7); // dropped: the first of its cohort
        for (let i = 2; i < 1_024; i++) admitted(admission, 1).release();
        return admitted(admission, 1); // the 1,024th: same cohort, kept
      })();
      (() => {
        admitted(admission, 3); // dropped: the first of the next cohort, whose collection shows the GC ran
        for (let i = 2; i <= 1_024; i++) admitted(admission, 1).release();
      })();
      await collectUntil(() => admission.report().leaked > 0);
      for (let i = 0; i < 5; i++) {
        gc?.();
        await turn();
      }
      // The next cohort's 3 came back; the 7 is held by the permit kept in its cohort.
      expect(admission.report()).toMatchObject({ depth: 2, units: 8, leaked: 1 });
      kept.release();
      kept = undefined;
      await collectUntil(() => admission.report().leaked === 2);
      expect(admission.report()).toMatchObject({ depth: 0, units: 0, leaked: 2 });
    } finally {
      vi.useRealTimers();
    }
  });

  it('the current cohort is closed every second (the rotation timer the admission sets)', () => {
    const setInterval = vi.spyOn(globalThis, 'setInterval');
    try {
      new BoundedAdmission({ requests: 1 });
      expect(setInterval.mock.calls.map(([, ms]) => ms)).toEqual([1_000]);
    } finally {
      vi.restoreAllMocks();
    }
  });
});
