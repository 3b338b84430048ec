/**
 * Deadlines and close timeouts of 2^31 ms or more are honoured: Node fires a setTimeout above
 * 2^31-1 ms after 1 ms, which would turn "a very long deadline" into an instant one. The main
 * thread's timers are faked (the fakes keep that 1 ms behaviour), so the test says exactly
 * when time passes; the worker's clock stays real and far from any of these deadlines.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Runtime } from '../src/index.js';
import { clearLongTimeout, MAX_TIMER_MS, setLongTimeout, unrefLongTimeout } from '../src/long-timeout.js';
import { builtModuleUrl } from '../src/paths.js';
import { INVOKED, newControl, open, STARTED, waitFor } from './fixtures/runtime-control.js';
import {
  cleanupOnRealClock,
  codeOf,
  control,
  gate,
  settledWhenAsked,
  start,
  turns,
  until,
} from './fixtures/runtime-harness.js';

afterEach(cleanupOnRealClock);

const INIT_WORKER = builtModuleUrl('test/fixtures/runtime-init-worker.js');

const LONG = 2 ** 31;
/**
 * What a deadline of LONG + MARGIN may lose before it is armed: wait mode and the serial scheduler
 * arm it a microtask after run(), with what the real clock leaves of it, and a process frozen in
 * between (a stalled machine) loses that time. Within the margin the timer stays beyond 2^31 ms.
 */
const MARGIN = 600_000;

function fakeTimers(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
}

describe('a deadline of 2^31 ms or more', () => {
  for (const [mode, admission] of [
    ['bounded', { requests: 2 }],
    ['wait mode', { requests: 2, wait: true }],
    ['serial', undefined],
  ] as const) {
    it(`fires when it is due, not after 1 ms (${mode})`, async () => {
      const rt = await start({ threads: 1, ...(admission ? { admission } : {}) });
      const c = control();
      fakeTimers();
      const call = rt.run(gate(c, { value: 'late' }), { deadlineMs: LONG + MARGIN });
      const code = codeOf(call);
      const settled = settledWhenAsked(call);
      await waitFor(c, STARTED, 1, call);
      vi.advanceTimersByTime(10);
      await turns();
      expect(settled()).toBe(false);
      vi.advanceTimersByTime(LONG - 10);
      await turns();
      expect(settled()).toBe(false);
      vi.advanceTimersByTime(MARGIN);
      expect(await code).toBe('OMNI_ERR_DEADLINE');
      vi.useRealTimers();
      expect(rt.report()).toMatchObject({ deadline: 1, depth: 1 });
    });
  }

  it('Infinity means none: it never fires and lifts the runtime default', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 }, deadlineMs: 60_000 });
    const c = control();
    fakeTimers();
    const call = rt.run(gate(c, { value: 'done' }), { deadlineMs: Number.POSITIVE_INFINITY });
    const settled = settledWhenAsked(call);
    await waitFor(c, STARTED, 1, call);
    vi.advanceTimersByTime(2 ** 40);
    await turns();
    expect(settled()).toBe(false);
    vi.useRealTimers();
    open(c);
    await expect(call).resolves.toBe('done');
    expect(rt.report()).toMatchObject({ deadline: 0, completed: 1 });
  });

  it('a waiter for admission keeps waiting', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1, wait: true } });
    const held = control();
    const first = rt.run(gate(held, { value: 'first' }));
    await waitFor(held, STARTED, 1, first);
    fakeTimers();
    const waiting = rt.run({ mode: 'echo', value: 'second' }, { deadlineMs: LONG });
    const settled = settledWhenAsked(waiting);
    vi.advanceTimersByTime(10);
    await turns();
    expect(settled()).toBe(false);
    expect(rt.report()).toMatchObject({ waiting: 1, deadline: 0 });
    vi.useRealTimers();
    open(held);
    await expect(Promise.all([first, waiting])).resolves.toEqual(['first', 'second']);
  });
});

describe('close({ timeoutMs }) of 2^31 ms or more, or Infinity (none)', () => {
  it.each([
    ['2^31 ms', LONG],
    ['Infinity', Number.POSITIVE_INFINITY],
  ])('%s: waits for the work instead of terminating it after 1 ms', async (_name, timeoutMs) => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const c = control();
    const call = rt.run(gate(c, { value: 'done', sync: true }));
    await waitFor(c, STARTED, 1, call);
    fakeTimers();
    const closing = rt.close({ timeoutMs });
    const closed = settledWhenAsked(closing);
    vi.advanceTimersByTime(10);
    await turns();
    expect(closed()).toBe(false);
    expect(rt.report()).toMatchObject({ state: 'draining', depth: 1 });
    vi.useRealTimers();
    open(c);
    await expect(call).resolves.toBe('done');
    await closing;
    expect(rt.report()).toMatchObject({ state: 'stopped', completed: 1, failed: 0 });
  });
});

describe('startTimeoutMs of 2^31 ms or more, or Infinity (none)', () => {
  // It was an integer up to 2^31-1 (one setTimeout), where every other timeout takes any length.
  it.each([
    ['2^31 ms', LONG],
    ['Infinity', Number.POSITIVE_INFINITY],
  ])('%s: start() takes it, and a close hook is waited for, not cut short', async (_name, startTimeoutMs) => {
    // The harness's, opened by cleanup: a test failed before its open() leaves no hook held.
    const closed = control();
    const rt = await start({
      worker: INIT_WORKER,
      threads: 1,
      startTimeoutMs,
      workerData: { closed: closed.buffer, closeGate: true },
    });
    await expect(rt.run(null)).resolves.toBeUndefined();
    fakeTimers();
    const closing = rt.close();
    const closedYet = settledWhenAsked(closing);
    await waitFor(closed, INVOKED, 1, closing); // the hook runs, held at its gate
    // Short of the bound; for Infinity, far past any finite one (the 30 s default included).
    // Mutant: Infinity read as the default 30 s (options.ts): the hook was cut after 30 s.
    vi.advanceTimersByTime(startTimeoutMs === Number.POSITIVE_INFINITY ? 4 * LONG : LONG - 1);
    await turns();
    expect(closedYet()).toBe(false);
    vi.useRealTimers();
    open(closed);
    await expect(closing).resolves.toEqual({ clean: true, abandoned: 0 });
    expect(Atomics.load(closed, STARTED)).toBe(1); // the hook returned: it was not cut short
  });
});

describe('startTimeoutMs and idleTimeout are read once', () => {
  it('a startTimeoutMs getter that answers 1000, then undefined, bounds the close hooks at 1000 ms', async () => {
    // Read twice, the second read (undefined) was taken for "no limit": the hook was waited for
    // without end, neither the 1000 ms the option answered nor the 30 s default.
    const closed = newControl();
    const reads = { startTimeoutMs: 0, idleTimeout: 0 };
    const options = {
      worker: INIT_WORKER,
      threads: 1,
      workerData: { closed: closed.buffer, closeGate: true },
      get startTimeoutMs(): number | undefined {
        return reads.startTimeoutMs++ === 0 ? 1_000 : undefined;
      },
      get idleTimeout(): number {
        reads.idleTimeout++;
        return 0;
      },
    };
    // Faked from before the start: its own 1000 ms bound, real, failed the start when the thread
    // took longer than that to load and init on a busy machine.
    fakeTimers();
    // Runtime.start itself: the harness's start() spreads the options, reading each getter once.
    const rt = await Runtime.start(options);
    const closing = rt.close();
    try {
      const closedYet = settledWhenAsked(closing);
      await waitFor(closed, INVOKED, 1, closing); // the hook runs, held at its gate
      vi.advanceTimersByTime(1_000);
      await turns();
      vi.useRealTimers();
      await until(closedYet, 'close() to give up on the hook');
      expect(Atomics.load(closed, STARTED)).toBe(0); // cut short: it never returned
      expect(rt.report().state).toBe('stopped');
      expect(reads).toEqual({ startTimeoutMs: 1, idleTimeout: 1 });
    } finally {
      vi.useRealTimers();
      open(closed);
      await closing;
    }
  });
});

describe('setLongTimeout', () => {
  it('clearLongTimeout stops a timer longer than one setTimeout, whichever step is armed', () => {
    fakeTimers();
    const fired = vi.fn();
    clearLongTimeout(setLongTimeout(fired, 2 * LONG + 5, 'due')); // its first step is armed
    const timer = setLongTimeout(fired, 2 * LONG + 5, 'due');
    vi.advanceTimersByTime(MAX_TIMER_MS + 1); // its first step has fired: the second is armed
    clearLongTimeout(timer);
    vi.advanceTimersByTime(4 * LONG);
    expect(fired).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('fires once, when due, across its steps', () => {
    fakeTimers();
    const fired = vi.fn();
    setLongTimeout(fired, 2 * LONG + 5, 'due');
    vi.advanceTimersByTime(2 * LONG + 4);
    expect(fired).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fired).toHaveBeenCalledExactlyOnceWith('due');
    expect(vi.getTimerCount()).toBe(0);
  });

  // The process-lifetime test (a lost thread's due timer) cannot wait for a step to re-arm.
  it('unrefLongTimeout lets the process end across every step, the ones armed later too', () => {
    fakeTimers();
    const timer = setLongTimeout(() => {}, 2 * LONG + 5, undefined);
    unrefLongTimeout(timer);
    const step = (): { hasRef(): boolean } => (timer as unknown as { step: { hasRef(): boolean } }).step;
    const first = step();
    expect(first.hasRef()).toBe(false);
    vi.advanceTimersByTime(MAX_TIMER_MS); // the first step ends and arms the next
    expect(step()).not.toBe(first);
    expect(step().hasRef()).toBe(false);
    clearLongTimeout(timer);
  });

  it('without unrefLongTimeout, every step holds the process (as a plain setTimeout does)', () => {
    fakeTimers();
    const timer = setLongTimeout(() => {}, 2 * LONG + 5, undefined);
    const step = (): { hasRef(): boolean } => (timer as unknown as { step: { hasRef(): boolean } }).step;
    const first = step();
    expect(first.hasRef()).toBe(true);
    vi.advanceTimersByTime(MAX_TIMER_MS);
    expect(step()).not.toBe(first);
    expect(step().hasRef()).toBe(true);
    clearLongTimeout(timer);
  });

  it('unrefLongTimeout on a plain timer, or on none (Infinity)', () => {
    fakeTimers();
    const timer = setLongTimeout(() => {}, MAX_TIMER_MS, undefined);
    unrefLongTimeout(timer);
    expect((timer as NodeJS.Timeout).hasRef()).toBe(false);
    expect(() => unrefLongTimeout(undefined)).not.toThrow();
    clearLongTimeout(timer);
  });

  it('Infinity arms no timer at all (one would hold the process open for nothing)', () => {
    fakeTimers();
    expect(setLongTimeout(() => {}, Number.POSITIVE_INFINITY, undefined)).toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });
});
