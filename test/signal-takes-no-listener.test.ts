/**
 * A caller's AbortSignal that takes no listener, or lets none go: Node's EventTarget methods
 * read the signal's own `constructor`, which the caller may make throw (always, or only from
 * some moment on). Following it must then fail with nothing left behind, and letting it go
 * must never fail: a call or an admission wait still settles once, its capacity comes back
 * once, and the outcomes add up to the calls made.
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { followAbort, unfollowAbort } from '../src/abort-signal.js';
import { BoundedAdmission } from '../src/admission/index.js';
import { refusingSignal } from './fixtures/refusing-signal.js';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, control, gate, rejection, settledWhenAsked, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

describe('followAbort and unfollowAbort', () => {
  // The set of followers was recorded before the listener that failed: the next follower of
  // the same signal joined it without a listener, and never heard the abort.
  it('a signal that takes no listener refuses every follower, not only the first', () => {
    const { signal, refusal } = refusingSignal();
    const follower = { handleEvent() {} };
    expect(() => followAbort(signal, follower)).toThrow(refusal);
    expect(() => followAbort(signal, follower)).toThrow(refusal);
  });

  it('letting go of a signal whose listener cannot be removed does not throw', () => {
    const { controller, signal, state } = refusingSignal(false);
    const follower = { handleEvent() {} };
    followAbort(signal, follower);
    state.refusing = true;
    expect(() => unfollowAbort(signal, follower)).not.toThrow();
    state.refusing = false;
    // The listener stayed; a later follower shares it and hears the abort.
    const heard: string[] = [];
    followAbort(signal, { handleEvent: () => heard.push('later') });
    expect(getEventListeners(signal, 'abort')).toHaveLength(1);
    controller.abort();
    expect(heard).toEqual(['later']);
  });
});

describe('an admission wait whose signal takes no listener', () => {
  // The waiter was queued and counted before its signal was followed: left queued, it held the
  // WAITING flag (every tryAdmit refused) and then took the next permit, which nobody held.
  it("rejects with the signal's error and leaves nothing queued or held", async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    const held = admission.tryAdmit();
    if (!held.ok) throw new Error('the first permit was refused');
    const { signal, refusal } = refusingSignal();
    expect(await rejection(admission.admit(1, { signal }))).toBe(refusal);
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 0 });
    held.release();
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 0 });
    const next = admission.tryAdmit();
    expect(next.ok).toBe(true);
    if (next.ok) next.release();
  });
});

describe('Runtime.run with a signal that takes no listener', () => {
  // The first call's failed follow left its signal recorded: the second call with it was
  // dispatched without a listener, and as it ended, letting go of the signal threw out of its
  // reply (an unhandled rejection): it never settled, and stayed counted as queued.
  it('rejects every call made with it, and the calls still add up', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const { signal, refusal } = refusingSignal();
    for (let i = 0; i < 2; i++) {
      const call = rt.run({ mode: 'echo', value: i }, { signal });
      const settled = settledWhenAsked(call);
      // One thread, calls in order: this call's answer comes after the one above would have.
      await expect(rt.run({ mode: 'echo', value: 'next' })).resolves.toBe('next');
      expect(settled()).toBe(true);
      expect(await rejection(call)).toBe(refusal);
    }
    expect(rt.report()).toMatchObject({ depth: 0, queued: 0, running: 0, completed: 2, invalid: 2 });
  });

  it('a call whose signal stops taking listeners while it runs still settles once', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const { signal, state } = refusingSignal(false);
    const c = control();
    const call = rt.run(gate(c, { value: 'done' }), { signal });
    await waitFor(c, STARTED, 1, call);
    state.refusing = true;
    const settled = settledWhenAsked(call);
    open(c);
    await expect(rt.run({ mode: 'echo', value: 'next' })).resolves.toBe('next');
    expect(settled()).toBe(true);
    await expect(call).resolves.toBe('done');
    expect(rt.report()).toMatchObject({ depth: 0, queued: 0, running: 0, completed: 2, failed: 0 });
  });

  // With `wait`, the call's admission wait followed the signal: it rejected with the signal's
  // error but counted in no outcome, and its waiter stayed queued, taking the next free slot.
  it('with wait: a waiting call rejects, is counted, and leaves the capacity to the next', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1, wait: true } });
    const c = control();
    const held = rt.run(gate(c, { value: 'held' }));
    await waitFor(c, STARTED, 1, held);
    const { signal, refusal } = refusingSignal();
    expect(await rejection(rt.run({ mode: 'echo', value: 1 }, { signal }))).toBe(refusal);
    expect(rt.report()).toMatchObject({ waiting: 0, invalid: 1 });
    open(c);
    await expect(held).resolves.toBe('held');
    await expect(rt.run({ mode: 'echo', value: 'next' })).resolves.toBe('next');
    expect(rt.report()).toMatchObject({ depth: 0, waiting: 0, completed: 2, invalid: 1 });
  });
});
