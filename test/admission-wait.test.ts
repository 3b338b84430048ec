/**
 * admit(): waiting for room on one instance, FIFO order, abort signals, timeouts and close();
 * with a unit ceiling, no starvation of a large head. The waiting flag under forced
 * interleavings is in test/admission-wake-races.test.ts, waiting across real threads in
 * test/admission-wait-threads.test.ts.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { type AdmitOptions, BoundedAdmission, type Permit } from '../src/index.js';
import { admitted, rejection, track, turn, WORD_MODES } from './fixtures/admission-interleave.js';
import {
  abortedSayingNot,
  abortedWithThrowingReason,
  shadowed,
  throwingReason,
} from './fixtures/shadowed-signal.js';

describe.each(WORD_MODES)('admit (%s)', (_mode, units) => {
  it('resolves at once when there is room, without queueing', async () => {
    const admission = new BoundedAdmission({ requests: 2, units });
    const permit = await admission.admit(3);
    expect(permit.ok).toBe(true);
    expect(permit.units).toBe(3);
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 0 });
    permit.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0 });
  });

  it('resolves waiters in FIFO order as capacity comes back', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission, 1);
    const order: string[] = [];
    const waiters = ['a', 'b', 'c', 'd'].map((name) =>
      admission.admit(1).then((permit) => {
        order.push(name);
        return permit;
      }),
    );
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 4 });
    holder.release();
    for (let i = 0; i < waiters.length; i++) {
      const permit = await waiters[i]!;
      await turn();
      // Exactly one waiter holds the single request at a time.
      expect(order).toEqual(['a', 'b', 'c', 'd'].slice(0, i + 1));
      expect(admission.report()).toMatchObject({ depth: 1, waiting: waiters.length - i - 1 });
      permit.release();
    }
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, waiting: 0, rejected: 0 });
  });

  it('refuses tryAdmit while waiters exist, and stops once they are gone', async () => {
    const admission = new BoundedAdmission({ requests: 2, units });
    const holders = [admitted(admission, 5), admitted(admission, 5)];
    const waiter = admission.admit(1);
    // Full: the bound that is full, waiter or not ('queued' only where the cost would fit).
    expect(admission.tryAdmit(0)).toEqual({ ok: false, reason: 'requests' });
    expect(admission.report()).toMatchObject({ depth: 2, waiting: 1, rejected: 1 });
    holders[0]!.release();
    const permit = await waiter;
    expect(admission.report()).toMatchObject({ waiting: 0, depth: 2 });
    holders[1]!.release();
    const next = admitted(admission, 1); // no waiters left: admitted again
    expect(admission.report()).toMatchObject({ depth: 2, rejected: 1 });
    next.release();
    permit.release();
  });

  it('rejects at once with AbortError when the signal is already aborted (not counted)', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission, 1);
    const controller = new AbortController();
    controller.abort(new Error('caller went away'));
    const pending = admission.admit(1, { signal: controller.signal });
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 0 });
    const err = await rejection(pending);
    expect(err.name).toBe('AbortError');
    expect(err.code).toBe('OMNI_ERR_ABORTED');
    // Even with room, an aborted signal is not admitted.
    holder.release();
    const err2 = await rejection(admission.admit(1, { signal: controller.signal }));
    expect(err2.code).toBe('OMNI_ERR_ABORTED');
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 0, rejected: 0 });
  });

  it('removes a waiter aborted while queued at once; it never takes capacity later', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission, 1);
    const controller = new AbortController();
    const aborted = admission.admit(1, { signal: controller.signal });
    const behind = track(admission.admit(2));
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 2 });
    controller.abort();
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 1, rejected: 0 });
    const err = await rejection(aborted);
    expect(err.name).toBe('AbortError');
    expect(err.code).toBe('OMNI_ERR_ABORTED');
    holder.release();
    await turn();
    // The capacity went to the waiter behind it, not to the aborted one.
    expect(behind.settled).toBe(true);
    const permit = behind.value as Permit;
    expect(permit.units).toBe(2);
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 0 });
    permit.release();
    await turn();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, waiting: 0, rejected: 0 });
  });

  it('leaves the last waiter aborted with nothing queued and nothing taken', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission, 1);
    const controller = new AbortController();
    const aborted = admission.admit(1, { signal: controller.signal });
    expect(admission.tryAdmit(1)).toEqual({ ok: false, reason: 'requests' });
    controller.abort();
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 1 });
    await rejection(aborted);
    holder.release();
    await turn();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, waiting: 0 });
    // The queued flag is gone with the waiter: tryAdmit admits again.
    admitted(admission, 1).release();
  });

  it('ignores an abort after admission: the permit stays held', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission, 1);
    const controller = new AbortController();
    const pending = admission.admit(1, { signal: controller.signal });
    holder.release();
    const permit = await pending;
    controller.abort();
    await turn();
    expect(permit.released).toBe(false);
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 0 });
    permit.release();
  });

  it('rejects with OMNI_ERR_TIMEOUT, counts it, and leaves the queue', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission, 1);
    const pending = admission.admit(1, { timeoutMs: 1 });
    expect(admission.report()).toMatchObject({ waiting: 1, rejected: 0 });
    const err = await rejection(pending);
    expect(err.code).toBe('OMNI_ERR_TIMEOUT');
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 1 });
    holder.release();
    await turn();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, waiting: 0, rejected: 1 });
  });

  it('does not time out a waiter admitted before its deadline', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission, 1);
    const pending = admission.admit(1, { timeoutMs: 600_000 });
    holder.release();
    const permit = await pending;
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 0 });
    permit.release();
  });

  it.each([-1, Number.NaN, '5'])(
    'rejects timeoutMs = %s with OMNI_ERR_INVALID_ARGUMENT',
    async (timeoutMs) => {
      const admission = new BoundedAdmission({ requests: 1, units });
      const err = await rejection(admission.admit(1, { timeoutMs: timeoutMs as number }));
      expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(admission.report()).toMatchObject({ depth: 0, waiting: 0, rejected: 0 });
    },
  );

  // Node fires a setTimeout above 2^31-1 ms after 1 ms; fake timers do the same, so these fail
  // if a long timeout is handed to one setTimeout.
  it.each([
    ['2^31 ms', 2 ** 31],
    ['3e9 ms', 3e9],
  ])('honours a timeoutMs of %s, beyond what one setTimeout holds', async (_name, timeoutMs) => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const admission = new BoundedAdmission({ requests: 1, units });
      const holder = admitted(admission, 1);
      const state = track(admission.admit(1, { timeoutMs }));
      vi.advanceTimersByTime(2 ** 31 - 1);
      await turn();
      expect(state.settled).toBe(false);
      expect(admission.report()).toMatchObject({ waiting: 1, rejected: 0 });
      vi.advanceTimersByTime(timeoutMs - (2 ** 31 - 1));
      await turn();
      expect((state.error as { code?: string } | undefined)?.code).toBe('OMNI_ERR_TIMEOUT');
      expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 1 });
      holder.release();
    } finally {
      vi.useRealTimers();
    }
  });

  it('treats timeoutMs: Infinity as no timeout', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const admission = new BoundedAdmission({ requests: 1, units });
      const holder = admitted(admission, 1);
      const pending = admission.admit(1, { timeoutMs: Number.POSITIVE_INFINITY });
      const state = track(pending);
      vi.advanceTimersByTime(2 ** 40);
      await turn();
      expect(state.settled).toBe(false);
      holder.release();
      (await pending).release();
      expect(admission.report()).toMatchObject({ depth: 0, waiting: 0, rejected: 0 });
    } finally {
      vi.useRealTimers();
    }
  });

  it.each([
    ['a plain object signal', { signal: {} }],
    // Kills: abort-signal.ts isAbortSignal without its `instanceof AbortSignal` (the getter check
    // alone let any object with a boolean `aborted` through).
    ['a look-alike with a boolean aborted', { signal: { aborted: false } }],
    ['an EventTarget that is not an AbortSignal', { signal: new EventTarget() }],
    [
      'an object made from AbortSignal.prototype (its getters throw)',
      { signal: Object.create(AbortSignal.prototype) },
    ],
    ['null options', null],
    // Its traps would answer the slot reads, and its abort reaches the signal it wraps.
    ['a Proxy of an AbortSignal', { signal: new Proxy(new AbortController().signal, {}) }],
  ])('rejects %s with OMNI_ERR_INVALID_ARGUMENT before queueing', async (_name, options) => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const holder = admitted(admission, 1);
    const err = await rejection(admission.admit(1, options as AdmitOptions));
    expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 0 });
    // The queue is intact: a proper waiter is admitted when room comes back.
    const next = admission.admit(1);
    holder.release();
    (await next).release();
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 0 });
  });

  it('does not admit a waiter whose signal aborted, even when an earlier abort listener frees room', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    const controller = new AbortController();
    const sibling = admitted(admission, 1);
    // Registered before admit(): it runs first and its release wakes the queue at once.
    controller.signal.addEventListener('abort', () => sibling.release());
    const pending = admission.admit(1, { signal: controller.signal });
    controller.abort();
    expect((await rejection(pending)).code).toBe('OMNI_ERR_ABORTED');
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, waiting: 0, rejected: 0 });
  });

  it.each([-1, 1.5, Number.NaN, 2 ** 53])(
    'rejects cost %s with OMNI_ERR_INVALID_COST, changing nothing',
    async (cost) => {
      const admission = new BoundedAdmission({ requests: 1, units });
      const before = admission.report();
      const err = await rejection(admission.admit(cost));
      expect(err.code).toBe('OMNI_ERR_INVALID_COST');
      expect(admission.report()).toEqual(before);
    },
  );

  it('rejects with OMNI_ERR_CLOSED once closed, and counts it', async () => {
    const admission = new BoundedAdmission({ requests: 1, units });
    await admission.close();
    const err = await rejection(admission.admit(1));
    expect(err.code).toBe('OMNI_ERR_CLOSED');
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 0, rejected: 1 });
  });

  it('close() wakes every waiter with OMNI_ERR_CLOSED and drains only when the last permit is released', async () => {
    const admission = new BoundedAdmission({ requests: 2, units });
    const a = admitted(admission, 4);
    const b = admitted(admission, 4);
    const waiters = [admission.admit(1), admission.admit(2), admission.admit(1)];
    expect(admission.report()).toMatchObject({ waiting: 3, rejected: 0 });
    const drained = track(admission.close());
    expect(admission.report()).toMatchObject({ depth: 2, waiting: 0, rejected: 3 });
    for (const waiter of waiters) expect((await rejection(waiter)).code).toBe('OMNI_ERR_CLOSED');
    await turn();
    expect(drained.settled).toBe(false);
    // Closed: new admissions are refused, but release still works.
    expect(admission.tryAdmit(1)).toEqual({ ok: false, reason: 'closed' });
    expect((await rejection(admission.admit(1))).code).toBe('OMNI_ERR_CLOSED');
    b.release();
    await turn();
    expect(drained.settled).toBe(false);
    expect(admission.report()).toMatchObject({ depth: 1 });
    a.release();
    await turn();
    expect(drained.settled).toBe(true);
    expect(drained.error).toBeUndefined();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, waiting: 0, rejected: 5 });
    await admission.close(); // closing again, drained already, resolves
  });

  it('close() counts a claim released from an attached instance', async () => {
    const admission = new BoundedAdmission({ requests: 2, units });
    const attached = BoundedAdmission.attach(admission.buffer);
    const claim = admitted(admission, 3).toClaim();
    const drained = track(admission.close());
    await turn();
    expect(drained.settled).toBe(false);
    attached.releaseClaim(claim);
    await turn();
    expect(drained.settled).toBe(true);
  });
});

describe("admit reads the signal by its internal slots, not the caller's own properties", () => {
  it('an aborted signal whose own reason throws: admit() rejects AbortError, not throws', async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    const err = await rejection(admission.admit(1, { signal: abortedWithThrowingReason() }));
    expect(err.code).toBe('OMNI_ERR_ABORTED');
    expect((err.cause as Error).message).toBe('the real reason');
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 0, rejected: 0 });
  });

  it('a waiter whose signal has an own reason that throws rejects at its abort', async () => {
    // The abort listener threw the getter's error (uncaught) and the waiter stayed pending.
    const admission = new BoundedAdmission({ requests: 1 });
    const holder = admitted(admission, 1);
    const { controller, signal } = throwingReason();
    const waiter = admission.admit(1, { signal });
    expect(admission.report().waiting).toBe(1);
    controller.abort(new Error('caller gone'));
    const err = await rejection(waiter);
    expect(err.code).toBe('OMNI_ERR_ABORTED');
    expect((err.cause as Error).message).toBe('caller gone');
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0 });
    holder.release();
  });

  it('a signal aborted already whose own aborted says false is not queued', async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    const holder = admitted(admission, 1);
    const err = await rejection(admission.admit(1, { signal: abortedSayingNot() }));
    expect(err.code).toBe('OMNI_ERR_ABORTED');
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0 });
    holder.release();
  });

  it('an own addEventListener that listens to nothing: the abort is still heard', async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    const holder = admitted(admission, 1);
    const controller = new AbortController();
    Object.defineProperty(controller.signal, 'addEventListener', { value: () => {} });
    const waiter = admission.admit(1, { signal: controller.signal });
    controller.abort();
    expect((await rejection(waiter)).code).toBe('OMNI_ERR_ABORTED');
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0 });
    holder.release();
  });

  it('a signal aborted already whose own aborted says false is refused even with room', async () => {
    // Checked through its own aborted, it was granted a permit: room at once, no queue to notice.
    const admission = new BoundedAdmission({ requests: 1 });
    const err = await rejection(admission.admit(1, { signal: abortedSayingNot() }));
    expect(err.code).toBe('OMNI_ERR_ABORTED');
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 0, rejected: 0 });
  });

  it('a waiter whose signal says it is not aborted is not admitted once it is', async () => {
    // The earlier listener frees room before the waiter's own listener runs: the queue's head
    // check must read the signal's slot, not its own aborted, or the waiter is granted.
    const admission = new BoundedAdmission({ requests: 1 });
    const controller = new AbortController();
    const sibling = admitted(admission, 1);
    controller.signal.addEventListener('abort', () => sibling.release());
    const signal = shadowed(controller.signal, 'aborted', () => false);
    const pending = admission.admit(1, { signal });
    controller.abort();
    expect((await rejection(pending)).code).toBe('OMNI_ERR_ABORTED');
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 0, rejected: 0 });
  });

  it('a signal whose own aborted throws is still a signal: its waiter rejects at its abort', async () => {
    // Taken through its own aborted, it was no AbortSignal: refused OMNI_ERR_INVALID_ARGUMENT.
    const admission = new BoundedAdmission({ requests: 1 });
    const holder = admitted(admission, 1);
    const controller = new AbortController();
    const signal = shadowed(controller.signal, 'aborted', () => {
      throw new Error("the signal's own aborted getter");
    });
    const waiter = admission.admit(1, { signal });
    expect(admission.report().waiting).toBe(1);
    controller.abort();
    expect((await rejection(waiter)).code).toBe('OMNI_ERR_ABORTED');
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0 });
    holder.release();
  });

  it('an own removeEventListener that throws: a granted waiter stops listening, release() does not throw', async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    const holder = admitted(admission, 1);
    const controller = new AbortController();
    Object.defineProperty(controller.signal, 'removeEventListener', {
      value: () => {
        throw new Error("the signal's own removeEventListener");
      },
    });
    const waiter = admission.admit(1, { signal: controller.signal });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    holder.release(); // grants the waiter, which stops following its signal
    const permit = await waiter;
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    permit.release();
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 0 });
  });
});

describe('admit options', () => {
  it('whose getter throws: admit() rejects with its error, not throws, and queues nothing', async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    const holder = admitted(admission, 1);
    const thrown = new Error('an option getter');
    const options = {
      get signal(): never {
        throw thrown;
      },
    };
    await expect(admission.admit(1, options)).rejects.toBe(thrown);
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0, rejected: 0 });
    holder.release();
  });
});

describe('admit with a unit ceiling', () => {
  it('does not let small requests starve a large one at the head', async () => {
    const admission = new BoundedAdmission({ requests: 10, units: 10 });
    const holder = admitted(admission, 5);
    const extra = admitted(admission, 1);
    const order: number[] = [];
    const admit = (cost: number) => {
      const promise = admission.admit(cost);
      void promise.then(() => order.push(cost));
      return track(promise);
    };
    const head = admit(8);
    const small1 = admit(1);
    const small2 = admit(2);
    await turn();
    // 1 and 2 would fit beside the 6 held, but they stay behind the head.
    expect([head.settled, small1.settled, small2.settled]).toEqual([false, false, false]);
    expect(admission.report()).toMatchObject({ depth: 2, units: 6, waiting: 3 });
    expect(admission.tryAdmit(1)).toEqual({ ok: false, reason: 'queued' });
    // A release that still leaves too little for the head lets nobody pass it.
    extra.release();
    await turn();
    expect([head.settled, small1.settled, small2.settled]).toEqual([false, false, false]);
    expect(admission.report()).toMatchObject({ depth: 1, units: 5, waiting: 3 });
    holder.release();
    await turn();
    // The head takes 8; then 1 fits (9) and 2 does not (11).
    expect(order).toEqual([8, 1]);
    expect(admission.report()).toMatchObject({ depth: 2, units: 9, waiting: 1 });
    (head.value as Permit).release();
    await turn();
    expect(order).toEqual([8, 1, 2]);
    expect(admission.report()).toMatchObject({ depth: 2, units: 3, waiting: 0 });
    (small1.value as Permit).release();
    (small2.value as Permit).release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, waiting: 0, rejected: 1 });
  });

  it('orders waiters of mixed costs FIFO', async () => {
    const admission = new BoundedAdmission({ requests: 4, units: 10 });
    const holder = admitted(admission, 10);
    const order: number[] = [];
    const costs = [5, 3, 2, 7, 1];
    const pending = costs.map((cost) =>
      admission.admit(cost).then((permit) => {
        order.push(cost);
        return permit;
      }),
    );
    holder.release();
    await turn();
    expect(order).toEqual([5, 3, 2]);
    const permits = await Promise.all(pending.slice(0, 3));
    permits[0]!.release(); // 5 free: 7 still does not fit beside 3 + 2
    await turn();
    expect(order).toEqual([5, 3, 2]);
    permits[1]!.release(); // 8 free: 7 fits, then 1 (10)
    await turn();
    expect(order).toEqual([5, 3, 2, 7, 1]);
    for (const permit of [permits[2]!, ...(await Promise.all(pending.slice(3)))]) permit.release();
    expect(admission.report()).toMatchObject({ depth: 0, units: 0, waiting: 0, rejected: 0 });
  });

  it('rejects a cost above the ceiling at once with OMNI_ERR_TOO_LARGE (counted, never queued)', async () => {
    const admission = new BoundedAdmission({ requests: 2, units: 10 });
    const pending = admission.admit(11);
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 0, rejected: 1 });
    const err = await rejection(pending);
    expect(err.code).toBe('OMNI_ERR_TOO_LARGE');
    // The exact ceiling waits instead, and fits when empty.
    const holder = admitted(admission, 1);
    const whole = admission.admit(10);
    expect(admission.report()).toMatchObject({ waiting: 1, rejected: 1 });
    holder.release();
    const permit = await whole;
    expect(admission.report()).toMatchObject({ depth: 1, units: 10, waiting: 0 });
    permit.release();
  });
});
