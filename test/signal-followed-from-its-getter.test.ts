/**
 * A caller's AbortSignal whose own `constructor` getter (read by Node's EventTarget methods as a
 * listener is added or removed) follows the same signal: a call or an admission wait made from
 * inside it. Every follower must hear the abort. The first follow recorded its set of followers
 * after the listener was added, over the one the inner follow had just recorded; the last
 * follower's letting go removed the listener that a follow made meanwhile had found and shared.
 * Either way the inner follower never heard the abort (a call ran on and resolved, a waiter
 * stayed queued).
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { followAbort, unfollowAbort } from '../src/abort-signal.js';
import { BoundedAdmission, type Permit } from '../src/admission/index.js';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import {
  cleanup,
  codeOf,
  control,
  gate,
  settledWhenAsked,
  start,
  turns,
} from './fixtures/runtime-harness.js';
import { scriptedSignal } from './fixtures/scripted-signal.js';

afterEach(cleanup);

/** A signal whose own `constructor`, the next time it is read, runs what onNextRead() was given. */
function reentrantSignal() {
  const { controller, signal, steps } = scriptedSignal();
  const onNextRead = (inner: (signal: AbortSignal) => void): void => {
    steps.splice(0, steps.length, inner);
  };
  return { controller, signal, onNextRead };
}

describe('a signal followed again from its own getter', () => {
  it('both followers hear its abort, through one listener', () => {
    const heard: string[] = [];
    const { controller, signal, onNextRead } = reentrantSignal();
    onNextRead((s) => followAbort(s, { handleEvent: () => heard.push('inner') }));
    followAbort(signal, { handleEvent: () => heard.push('outer') });
    expect(getEventListeners(signal, 'abort')).toHaveLength(1);
    controller.abort();
    expect(heard.sort()).toEqual(['inner', 'outer']);
  });

  // The waiter made from the getter was followed by a set the outer wait then replaced: the
  // abort left it queued, counted as waiting, behind a head it could not pass.
  it('two admission waits, one made from the getter, both reject aborted', async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    const held = admission.tryAdmit();
    if (!held.ok) throw new Error('the first permit was refused');
    const ahead = admission.admit(1);
    let inner: Promise<Permit> | undefined;
    const { controller, signal, onNextRead } = reentrantSignal();
    onNextRead((s) => {
      inner = admission.admit(1, { signal: s });
    });
    const outer = admission.admit(1, { signal });
    expect(admission.report()).toMatchObject({ waiting: 3 });
    const waits = [outer, inner!];
    const settled = waits.map(settledWhenAsked);
    controller.abort();
    await turns();
    expect(settled.map((isSettled) => isSettled())).toEqual([true, true]);
    expect(await Promise.all(waits.map(codeOf))).toEqual(['OMNI_ERR_ABORTED', 'OMNI_ERR_ABORTED']);
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 1 });
    held.release();
    (await ahead).release();
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 0 });
  });

  // The call made from the getter ran on, its caller's abort unheard, and resolved.
  it('two calls, one made from the getter, both reject aborted, counted so', async () => {
    const rt = await start({ threads: 1, admission: { requests: 3 } });
    const c = control();
    const running = rt.run(gate(c, { sync: true, value: 'first' }));
    await waitFor(c, STARTED, 1, running);
    let inner: Promise<unknown> | undefined;
    const { controller, signal, onNextRead } = reentrantSignal();
    onNextRead((s) => {
      inner = rt.run({ mode: 'echo', value: 'inner' }, { signal: s });
    });
    const outer = rt.run({ mode: 'echo', value: 'outer' }, { signal });
    const codes = Promise.all([codeOf(outer), codeOf(inner!)]);
    controller.abort();
    open(c);
    await expect(running).resolves.toBe('first');
    expect(await codes).toEqual(['OMNI_ERR_ABORTED', 'OMNI_ERR_ABORTED']);
    await expect(rt.run({ mode: 'echo', value: 'next' })).resolves.toBe('next');
    expect(rt.report()).toMatchObject({ depth: 0, completed: 2, aborted: 2, failed: 0 });
  });
});

// Letting go of the signal's last follower reads that getter before the listener goes, and a
// follow made there found the listener still attached and added none: the listener then went,
// and the new follower never heard the abort.
describe('a signal followed again from its own getter as its last follower lets it go', () => {
  it('the new follower hears its abort', () => {
    const heard: string[] = [];
    const first = { handleEvent: () => heard.push('first') };
    const { controller, signal, onNextRead } = reentrantSignal();
    followAbort(signal, first);
    onNextRead((s) => followAbort(s, { handleEvent: () => heard.push('again') }));
    unfollowAbort(signal, first);
    expect(getEventListeners(signal, 'abort')).toHaveLength(1);
    controller.abort();
    expect(heard).toEqual(['again']);
  });

  // The call made as the first one ended ran on, its caller's abort unheard, and resolved.
  it('a call made from it as another call ends rejects aborted, counted so', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const c = control();
    const { controller, signal, onNextRead } = reentrantSignal();
    let inner: Promise<unknown> | undefined;
    const first = rt.run({ mode: 'echo', value: 'first' }, { signal });
    onNextRead((s) => {
      inner = rt.run(gate(c, { sync: true, value: 'inner' }), { signal: s });
    });
    await expect(first).resolves.toBe('first');
    const code = codeOf(inner!);
    await waitFor(c, STARTED, 1, inner);
    controller.abort();
    open(c);
    expect(await code).toBe('OMNI_ERR_ABORTED');
    await expect(rt.run({ mode: 'echo', value: 'next' })).resolves.toBe('next');
    expect(rt.report()).toMatchObject({ depth: 0, completed: 2, aborted: 1, failed: 0 });
  });
});

// The getter, read as the last follower's listener goes, lets go of the set and follows anew:
// the new follower's own listener, added there, was the one the outer removal then took away.
describe('a signal let go of and followed anew from its getter as its last follower goes', () => {
  it('the new follower hears its abort, through one listener', () => {
    const heard: string[] = [];
    const first = { handleEvent: () => heard.push('first') };
    const passing = { handleEvent: () => heard.push('passing') };
    const { controller, signal, onNextRead } = reentrantSignal();
    followAbort(signal, first);
    onNextRead((s) => {
      followAbort(s, passing);
      unfollowAbort(s, passing);
      followAbort(s, { handleEvent: () => heard.push('anew') });
    });
    unfollowAbort(signal, first);
    expect(getEventListeners(signal, 'abort')).toHaveLength(1);
    controller.abort();
    expect(heard).toEqual(['anew']);
  });

  // Read again as the listener is given back, it lets go of that follower, follows anew (a
  // listener of its own), then throws: the set recorded anew was dropped with the listener's.
  it('the new follower hears its abort when the getter then throws', () => {
    const heard: string[] = [];
    const first = { handleEvent: () => heard.push('first') };
    const passing = { handleEvent: () => heard.push('passing') };
    const { controller, signal, onNextRead } = reentrantSignal();
    followAbort(signal, first);
    onNextRead((s) => {
      followAbort(s, passing);
      onNextRead((again) => {
        unfollowAbort(again, passing);
        followAbort(again, { handleEvent: () => heard.push('anew') });
        throw new Error('no listener this time');
      });
    });
    unfollowAbort(signal, first);
    expect(getEventListeners(signal, 'abort')).toHaveLength(1);
    controller.abort();
    expect(heard).toEqual(['anew']);
  });

  // A follow made there joined the set silently; the listener, gone with the removal, then
  // could not be given back (the getter throws from then on): the follower, told it followed,
  // never heard the abort. It adds the listener itself now, and is refused as any follow is.
  it('a follow made there, when the signal takes no listener next, is refused, not lost', () => {
    const heard: string[] = [];
    const refusal = new Error('no listener from now on');
    const first = { handleEvent: () => heard.push('first') };
    const { controller, signal, onNextRead } = reentrantSignal();
    followAbort(signal, first);
    let outcome: unknown;
    onNextRead((s) => {
      onNextRead(() => {
        throw refusal;
      });
      try {
        followAbort(s, { handleEvent: () => heard.push('again') });
        outcome = 'followed';
      } catch (err) {
        outcome = err;
      }
    });
    unfollowAbort(signal, first);
    expect(outcome).toBe(refusal);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    controller.abort();
    expect(heard).toEqual([]);
  });

  // Through admit(): a release admits a waiter synchronously, which lets go of the signal.
  it('an admission wait made anew from it rejects aborted, uncounted', async () => {
    const admission = new BoundedAdmission({ requests: 2 });
    const held = [admission.tryAdmit(), admission.tryAdmit()];
    const [one, two] = held.map((p) => {
      if (!p.ok) throw new Error('a first permit was refused');
      return p;
    });
    const { controller, signal, onNextRead } = reentrantSignal();
    const first = admission.admit(1, { signal });
    const waits: Promise<Permit>[] = [];
    onNextRead((s) => {
      waits.push(admission.admit(1, { signal: s }));
      two!.release(); // admits that wait: it lets go of the signal, the set's last
      waits.push(admission.admit(1, { signal: s }));
    });
    one!.release(); // admits `first`, the signal's last follower then
    const [passing, anew] = waits;
    const settled = settledWhenAsked(anew!);
    // The releases' wakes, whose look at the queue would find an aborted head, pass first.
    await turns();
    expect(settled()).toBe(false);
    expect(admission.report()).toMatchObject({ depth: 2, waiting: 1 });
    controller.abort();
    await turns();
    expect(settled()).toBe(true);
    expect(await codeOf(anew!)).toBe('OMNI_ERR_ABORTED');
    expect(admission.report()).toMatchObject({ depth: 2, waiting: 0, rejected: 0 });
    (await first).release();
    (await passing!).release();
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 0 });
  });
});
