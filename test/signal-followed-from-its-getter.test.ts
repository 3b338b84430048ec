/**
 * A caller's AbortSignal whose own `constructor` getter (read by Node's EventTarget method as
 * the first follower's listener is added) follows the same signal: a call or an admission wait
 * made from inside it. Both followers must hear the abort. The first follow recorded its set of
 * followers after the listener was added, over the one the inner follow had just recorded, so
 * the inner follower never heard the abort (a call ran on and resolved, a waiter stayed queued).
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { followAbort } from '../src/abort-signal.js';
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

afterEach(cleanup);

/** A signal whose own `constructor`, read the first time, runs `inner` (once). */
function reentrantSignal(inner: (signal: AbortSignal) => void) {
  const controller = new AbortController();
  const signal = controller.signal;
  let reads = 0;
  Object.defineProperty(signal, 'constructor', {
    get() {
      if (++reads === 1) inner(signal);
      return AbortSignal;
    },
  });
  return { controller, signal };
}

describe('a signal followed again from its own getter', () => {
  it('both followers hear its abort, through one listener', () => {
    const heard: string[] = [];
    const { controller, signal } = reentrantSignal((s) =>
      followAbort(s, { handleEvent: () => heard.push('inner') }),
    );
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
    const { controller, signal } = reentrantSignal((s) => {
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
    await waitFor(c, STARTED);
    let inner: Promise<unknown> | undefined;
    const { controller, signal } = reentrantSignal((s) => {
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
