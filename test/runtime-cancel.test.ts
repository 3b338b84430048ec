/**
 * Caller abort and caller deadline settle the caller at once, but never the capacity: it is
 * held while the work runs and comes back when the work ends (or, for work that never
 * started, as soon as the worker skips it, without running its handler).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunOptions, Runtime } from '../src/index.js';
import {
  CANCELLED,
  CANCELLED_TRUE,
  INVOKED,
  open,
  SIGNALLED,
  STARTED,
  waitFor,
} from './fixtures/runtime-control.js';
import {
  cleanupOnRealClock,
  codeOf,
  control,
  gate,
  rejection,
  start,
  turns,
  until,
} from './fixtures/runtime-harness.js';
import {
  abortedSayingNot,
  abortedWithThrowingReason,
  shadowed,
  throwingReason,
} from './fixtures/shadowed-signal.js';

const MODES = [
  ['bounded', { requests: 2 }],
  ['wait mode', { requests: 2, wait: true }],
  ['serial', undefined],
] as const;

afterEach(cleanupOnRealClock);

/**
 * Lets the work held at `c` end: its handler reports ctx.signal aborted (CANCELLED_TRUE), and
 * the capacity it held comes back.
 */
async function letEndSeeingItsSignal(rt: Runtime, c: Int32Array): Promise<void> {
  open(c);
  await waitFor(c, CANCELLED);
  expect(Atomics.load(c, CANCELLED)).toBe(CANCELLED_TRUE);
  await until(() => rt.report().depth === 0, 'depth 0');
}

/**
 * One thread: a first task holds it, the task under test queues behind it with `options`, and
 * a last task behind that. `leave` makes the caller of the middle task leave (it rejects with
 * `code`) before it starts: its capacity stays held until the thread skips it, which gives it
 * back before the last task ends, and its handler never runs. Returns the runtime, all three
 * settled.
 */
async function skippedBehindFirst(options: RunOptions, leave: () => void, code: string): Promise<Runtime> {
  const rt = await start({ threads: 1, admission: { requests: 3 } });
  const first = control();
  const skipped = control();
  const last = control();
  const running = rt.run(gate(first, { value: 'first' }));
  await waitFor(first, STARTED, 1, running);
  const call = rt.run({ mode: 'echo', control: skipped.buffer as SharedArrayBuffer }, options);
  const after = rt.run(gate(last, { value: 'last' }));
  expect(rt.report()).toMatchObject({ depth: 3, queued: 2 });

  leave();
  expect(await codeOf(call)).toBe(code);
  // Still queued behind the first task: its capacity stays held until it is skipped.
  expect(rt.report().depth).toBe(3);

  open(first);
  await expect(running).resolves.toBe('first');
  await waitFor(last, STARTED, 1, after);
  // The skipped task gave its capacity back before the last task ended (the last holds 1).
  expect(rt.report().depth).toBe(1);
  expect(Atomics.load(skipped, INVOKED)).toBe(0);
  open(last);
  await expect(after).resolves.toBe('last');
  await until(() => rt.report().depth === 0, 'depth 0');
  expect(Atomics.load(skipped, INVOKED)).toBe(0);
  return rt;
}

describe('a dispatched task whose caller left', () => {
  it('abort: the caller rejects at once, capacity is held until the work ends, ctx sees it', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const c = control();
    const ac = new AbortController();
    const call = rt.run(gate(c, { awaitSignal: true, value: 'late' }), { signal: ac.signal });
    await waitFor(c, STARTED, 1, call);
    expect(rt.report().depth).toBe(1);

    ac.abort(new Error('caller gone'));
    const err = await rejection(call);
    expect(err.name).toBe('AbortError');
    expect(err.code).toBe('OMNI_ERR_ABORTED');

    // ctx.signal fired in the worker, and the work is still running: capacity held.
    await waitFor(c, SIGNALLED);
    expect(rt.report()).toMatchObject({ depth: 1, aborted: 1, completed: 0, running: 1 });
    await turns();
    expect(rt.report().depth).toBe(1);

    await letEndSeeingItsSignal(rt, c);
    expect(rt.report()).toMatchObject({ depth: 0, aborted: 1, completed: 0, failed: 0 });
    // The capacity really came back: two more calls fit in the bound of 2.
    await expect(
      Promise.all([rt.run({ mode: 'echo', value: 1 }), rt.run({ mode: 'echo', value: 2 })]),
    ).resolves.toEqual([1, 2]);
  });

  it('a call whose caller aborted counts as aborted only, though its work then completes', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const c = control();
    const ac = new AbortController();
    const call = rt.run(gate(c, { value: 'late' }), { signal: ac.signal });
    await waitFor(c, STARTED, 1, call);
    ac.abort();
    expect(await codeOf(call)).toBe('OMNI_ERR_ABORTED');
    open(c); // the handler returns normally: its reply is a success nobody waits for
    // One thread: this call's reply comes after the aborted call's, which is then in.
    await expect(rt.run({ mode: 'echo', value: 1 })).resolves.toBe(1);
    expect(rt.report()).toMatchObject({ depth: 0, aborted: 1, completed: 1, failed: 0 });
  });

  it('abort during a blocking (native-like) call: capacity held until the call returns', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1 } });
    const c = control();
    const ac = new AbortController();
    const call = rt.run(gate(c, { sync: true, value: 'done' }), { signal: ac.signal });
    await waitFor(c, STARTED, 1, call);
    ac.abort();
    expect(await codeOf(call)).toBe('OMNI_ERR_ABORTED');
    expect(rt.report().depth).toBe(1);
    // The bound is full while the abandoned work runs: a new call is refused, not admitted.
    const refused = await rejection(rt.run({ mode: 'echo' }));
    expect(refused).toMatchObject({ code: 'OMNI_ERR_REJECTED', reason: 'requests', depth: 1, capacity: 1 });

    await letEndSeeingItsSignal(rt, c);
    await expect(rt.run({ mode: 'echo', value: 'next' })).resolves.toBe('next');
  });

  it('deadline: the caller rejects OMNI_ERR_DEADLINE, capacity is held until the work ends', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const c = control();
    // Only the main thread's timers are faked: the deadline fires exactly when the test says,
    // after the task has started (the worker's own clock is real and far from the deadline).
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const call = rt.run(gate(c, { awaitSignal: true, value: 'late' }), { deadlineMs: 60_000 });
    await waitFor(c, STARTED, 1, call);
    vi.advanceTimersByTime(60_000);
    vi.useRealTimers();
    expect(await codeOf(call)).toBe('OMNI_ERR_DEADLINE');

    await waitFor(c, SIGNALLED);
    expect(rt.report()).toMatchObject({ depth: 1, deadline: 1, completed: 0 });
    await turns();
    expect(rt.report().depth).toBe(1);

    await letEndSeeingItsSignal(rt, c);
    expect(rt.report()).toMatchObject({ depth: 0, deadline: 1, completed: 0, failed: 0 });
  });

  it('the runtime default deadline applies to every call', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 }, deadlineMs: 60_000 });
    const c = control();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const call = rt.run(gate(c, { sync: true }));
    await waitFor(c, STARTED, 1, call);
    vi.advanceTimersByTime(60_000);
    vi.useRealTimers();
    expect(await codeOf(call)).toBe('OMNI_ERR_DEADLINE');
    expect(rt.report().depth).toBe(1);
    open(c);
    await until(() => rt.report().depth === 0, 'depth 0');
  });
});

describe('a task whose caller left before it started', () => {
  it('abort: its handler never runs and its capacity returns as soon as it is skipped', async () => {
    const ac = new AbortController();
    const rt = await skippedBehindFirst({ signal: ac.signal }, () => ac.abort(), 'OMNI_ERR_ABORTED');
    expect(rt.report()).toMatchObject({ completed: 2, aborted: 1, failed: 0, deadline: 0 });
  });

  it('deadline: its handler never runs and its capacity returns as soon as it is skipped', async () => {
    // The gate holds the only thread until this deadline has passed and its caller rejected.
    const rt = await skippedBehindFirst({ deadlineMs: 5 }, () => {}, 'OMNI_ERR_DEADLINE');
    expect(rt.report()).toMatchObject({ completed: 2, deadline: 1, aborted: 0, failed: 0 });
  });

  for (const [mode, admission] of MODES) {
    it(`a signal aborted before run() is refused without admission or dispatch (${mode})`, async () => {
      const rt = await start({ threads: 1, ...(admission ? { admission } : {}) });
      const c = control();
      const err = await rejection(
        rt.run({ mode: 'echo', control: c.buffer as SharedArrayBuffer }, { signal: AbortSignal.abort() }),
      );
      expect(err).toMatchObject({ name: 'AbortError', code: 'OMNI_ERR_ABORTED' });
      expect(rt.report()).toMatchObject({ depth: 0, rejected: 0, aborted: 1 });
      await expect(rt.run({ mode: 'echo', value: 1 })).resolves.toBe(1);
      expect(Atomics.load(c, INVOKED)).toBe(0);
    });
  }

  for (const [mode, admission] of MODES.filter(([, a]) => a === undefined || 'wait' in a)) {
    it(`an abort in the same tick as run() is not lost while the permit is granted (${mode})`, async () => {
      // Wait mode and the serial scheduler admit through admit(), whose permit reaches
      // dispatch a microtask after run() returns: the caller aborts in that gap.
      const rt = await start({ threads: 1, ...(admission ? { admission } : {}) });
      const c = control();
      open(c); // the handler would not block: only the abort can keep it from completing
      const ac = new AbortController();
      const call = rt.run(gate(c, { value: 'ran' }), { signal: ac.signal });
      ac.abort(new Error('caller gone'));
      const err = await rejection(call);
      expect(err).toMatchObject({ name: 'AbortError', code: 'OMNI_ERR_ABORTED' });
      expect(rt.report()).toMatchObject({ depth: 0, aborted: 1, completed: 0, rejected: 0 });
      // Never dispatched: the next call runs, and the aborted one never reached its handler.
      await expect(rt.run({ mode: 'echo', value: 'next' })).resolves.toBe('next');
      expect(Atomics.load(c, INVOKED)).toBe(0);
      expect(rt.report()).toMatchObject({ depth: 0, aborted: 1, completed: 1 });
    });
  }
});

describe("run() reads the signal by its internal slots, not the caller's own properties", () => {
  for (const [mode, admission] of MODES) {
    it(`an aborted signal whose own reason throws: run() rejects AbortError, not throws (${mode})`, async () => {
      const rt = await start({ threads: 1, ...(admission ? { admission } : {}) });
      const err = await rejection(
        rt.run({ mode: 'echo', value: 1 }, { signal: abortedWithThrowingReason() }),
      );
      expect(err).toMatchObject({ name: 'AbortError', code: 'OMNI_ERR_ABORTED' });
      expect((err.cause as Error).message).toBe('the real reason');
      expect(rt.report()).toMatchObject({ depth: 0, aborted: 1, completed: 0 });
    });

    it(`a signal aborted already whose own aborted says false is not dispatched (${mode})`, async () => {
      const rt = await start({ threads: 1, ...(admission ? { admission } : {}) });
      const c = control();
      open(c); // the handler would not block: only the abort can keep it from completing
      const err = await rejection(rt.run(gate(c, { value: 'ran' }), { signal: abortedSayingNot() }));
      expect(err).toMatchObject({ name: 'AbortError', code: 'OMNI_ERR_ABORTED' });
      expect(rt.report()).toMatchObject({ depth: 0, aborted: 1, completed: 0 });
      expect(Atomics.load(c, INVOKED)).toBe(0);
    });
  }

  for (const [mode, admission] of MODES.filter(([, a]) => a === undefined || 'wait' in a)) {
    it(`an abort in the same tick as run(), own aborted saying false: not dispatched (${mode})`, async () => {
      // The permit reaches dispatch a microtask after run() returns; the check made there must
      // read the signal's slot, or the call is dispatched and runs to completion.
      const rt = await start({ threads: 1, ...(admission ? { admission } : {}) });
      const c = control();
      open(c); // the handler would not block: only the abort can keep it from completing
      const ac = new AbortController();
      const signal = shadowed(ac.signal, 'aborted', () => false);
      const call = rt.run(gate(c, { value: 'ran' }), { signal });
      ac.abort(new Error('caller gone'));
      const err = await rejection(call);
      expect(err).toMatchObject({ name: 'AbortError', code: 'OMNI_ERR_ABORTED' });
      expect(rt.report()).toMatchObject({ depth: 0, aborted: 1, completed: 0 });
      expect(Atomics.load(c, INVOKED)).toBe(0);
    });
  }

  it('a dispatched call whose signal has an own reason that throws rejects at its abort', async () => {
    // The abort listener threw the getter's error (uncaught) and the caller stayed pending.
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const c = control();
    const { controller, signal } = throwingReason();
    const call = rt.run(gate(c, { value: 'late' }), { signal });
    await waitFor(c, STARTED, 1, call);
    controller.abort(new Error('caller gone'));
    const err = await rejection(call);
    expect(err).toMatchObject({ name: 'AbortError', code: 'OMNI_ERR_ABORTED' });
    expect((err.cause as Error).message).toBe('caller gone');
    open(c);
    await until(() => rt.report().depth === 0, 'depth 0');
    expect(rt.report()).toMatchObject({ aborted: 1, completed: 0 });
  });
});
