/**
 * A caller's AbortSignal that aborts while it is being followed: Node's EventTarget method reads
 * the signal's own `constructor`, a getter of the caller's that may abort the signal there. Its
 * abort event then comes before the follower set exists, and told nobody: the follower must
 * still hear it (on a later microtask), as it would have had the abort come a moment later.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { followAbort } from '../src/abort-signal.js';
import { BoundedAdmission } from '../src/admission/index.js';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, codeOf, control, gate, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

/** What `promise` has settled with so far: its rejection's code, 'resolved', or 'pending'. */
function watched(promise: Promise<unknown>): () => string {
  let seen = 'pending';
  promise.then(
    () => {
      seen = 'resolved';
    },
    (err: { code?: string }) => {
      seen = err.code ?? 'uncoded';
    },
  );
  return () => seen;
}

async function microtasks(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

/** A signal whose own `constructor`, read the first time, aborts it. */
function abortingSignal(): AbortSignal {
  const controller = new AbortController();
  const signal = controller.signal;
  Object.defineProperty(signal, 'constructor', {
    get() {
      controller.abort();
      return AbortSignal;
    },
  });
  return signal;
}

describe('a signal that aborts as it is followed', () => {
  it('its follower hears the abort', async () => {
    const heard: string[] = [];
    followAbort(abortingSignal(), { handleEvent: () => heard.push('abort') });
    await Promise.resolve();
    expect(heard).toEqual(['abort']);
  });

  // The waiter was queued with its signal aborted and unheard: it stayed, counted as waiting,
  // until it came to the head of the queue (here: until the permit ahead was released).
  it('an admission wait behind another rejects aborted, and leaves nothing queued', async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    const held = admission.tryAdmit();
    if (!held.ok) throw new Error('the first permit was refused');
    const ahead = admission.admit(1);
    const waited = watched(admission.admit(1, { signal: abortingSignal() }));
    await microtasks();
    expect(waited()).toBe('OMNI_ERR_ABORTED');
    expect(admission.report()).toMatchObject({ depth: 1, waiting: 1 });
    held.release();
    (await ahead).release();
    expect(admission.report()).toMatchObject({ depth: 0, waiting: 0 });
  });

  // The call ran on, its caller's abort unheard, and resolved with its result.
  it('a call rejects aborted, counted so, and its work is skipped', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const c = control();
    const running = rt.run(gate(c, { sync: true, value: 'first' }));
    await waitFor(c, STARTED, 1, running);
    const call = rt.run({ mode: 'echo', value: 'late' }, { signal: abortingSignal() });
    const seen = watched(call);
    await microtasks();
    expect(seen()).toBe('OMNI_ERR_ABORTED');
    open(c);
    await expect(running).resolves.toBe('first');
    await expect(rt.run({ mode: 'echo', value: 'next' })).resolves.toBe('next');
    expect(await codeOf(call)).toBe('OMNI_ERR_ABORTED');
    expect(rt.report()).toMatchObject({ depth: 0, completed: 2, aborted: 1, failed: 0 });
  });

  // run() follows the signal before admission: aborted there, it is an abort before admission,
  // as one the signal had already made is, not a refusal by a runtime that happens to be full.
  it('a call to a full runtime rejects aborted, not refused', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1 } });
    const c = control();
    const running = rt.run(gate(c, { value: 'first' }));
    await waitFor(c, STARTED, 1, running);
    expect(await codeOf(rt.run({ mode: 'echo', value: 'late' }, { signal: abortingSignal() }))).toBe(
      'OMNI_ERR_ABORTED',
    );
    expect(rt.report()).toMatchObject({ depth: 1, rejected: 0, aborted: 1, refused: 0 });
    open(c);
    await expect(running).resolves.toBe('first');
  });
});
