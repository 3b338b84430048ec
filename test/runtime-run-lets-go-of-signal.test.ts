/**
 * run() follows a given signal before admission and holds it until the call ends (see
 * test/signal-takes-no-listener-any-load.test.ts): every way a call ends must let it go, or a
 * long-lived signal would keep a listener, and a follower per call, for good.
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { LinearRuntime, type Runtime } from '../src/index.js';
import { open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, codeOf, control, gate, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

const listeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

/** A runtime of one slot whose slot is held by a gated call until `release()`. */
async function full(wait: boolean): Promise<{ rt: Runtime; release: () => Promise<unknown> }> {
  const rt = await start({ threads: 1, admission: { requests: 1, wait } });
  const c = control();
  const held = rt.run(gate(c, { value: 'held' }));
  await waitFor(c, STARTED, 1, held);
  return {
    rt,
    release: () => {
      open(c);
      return held;
    },
  };
}

describe('run() lets go of the signal it followed, however the call ends', () => {
  it('completed, failed (an input that cannot be posted), invalid cost', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1 } });
    const signal = new AbortController().signal;
    await expect(rt.run({ mode: 'echo', value: 1 }, { signal })).resolves.toBe(1);
    expect(await codeOf(rt.run({ mode: 'echo', value: () => 1 }, { signal }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    expect(await codeOf(rt.run({ mode: 'echo', value: 1 }, { signal, cost: -1 }))).toBe(
      'OMNI_ERR_INVALID_COST',
    );
    expect(listeners(signal)).toBe(0);
    expect(rt.report()).toMatchObject({ completed: 1, failed: 1, invalid: 1, depth: 0 });
  });

  it('refused by a full runtime', async () => {
    const { rt, release } = await full(false);
    const signal = new AbortController().signal;
    expect(await codeOf(rt.run({ mode: 'echo', value: 1 }, { signal }))).toBe('OMNI_ERR_REJECTED');
    expect(listeners(signal)).toBe(0);
    await release();
  });

  it('aborted, past its deadline, or turned away by close() while it waited', async () => {
    const { rt, release } = await full(true);
    const controller = new AbortController();
    const signal = controller.signal;
    const aborted = codeOf(rt.run({ mode: 'echo', value: 1 }, { signal }));
    const late = codeOf(rt.run({ mode: 'echo', value: 2 }, { signal, deadlineMs: 1 }));
    // Both calls waiting on `signal` share its one listener.
    expect(listeners(signal)).toBe(1);
    expect(await late).toBe('OMNI_ERR_DEADLINE');
    expect(listeners(signal)).toBe(1);
    const other = new AbortController().signal;
    const turnedAway = codeOf(rt.run({ mode: 'echo', value: 3 }, { signal: other }));
    controller.abort();
    expect(await aborted).toBe('OMNI_ERR_ABORTED');
    expect(listeners(signal)).toBe(0);
    const closed = rt.close();
    expect(await turnedAway).toBe('OMNI_ERR_UNAVAILABLE');
    expect(listeners(other)).toBe(0);
    await release();
    await closed;
  });

  it('too large, past its deadline while it ran, its thread lost', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2, units: 4 } });
    const signal = new AbortController().signal;
    expect(await codeOf(rt.run({ mode: 'echo', value: 1 }, { signal, cost: 5 }))).toBe('OMNI_ERR_TOO_LARGE');
    expect(listeners(signal)).toBe(0);
    const c = control();
    // Rejected by its deadline whether or not the work had started: the gate holds it past it.
    expect(await codeOf(rt.run(gate(c), { signal, deadlineMs: 1 }))).toBe('OMNI_ERR_DEADLINE');
    expect(listeners(signal)).toBe(0);
    open(c);
    expect(await codeOf(rt.run({ mode: 'exit' }, { signal }))).toBe('OMNI_ERR_WORKER_EXITED');
    expect(listeners(signal)).toBe(0);
    expect(rt.report()).toMatchObject({ refused: 1, deadline: 1, failed: 1 });
  });

  it('abandoned by a close timeout, while another call with it waited', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1, wait: true } });
    const signal = new AbortController().signal;
    const c = control();
    const call = rt.run(gate(c, { sync: true }), { signal });
    const running = codeOf(call);
    await waitFor(c, STARTED, 1, call);
    const waiting = codeOf(rt.run({ mode: 'echo', value: 1 }, { signal }));
    expect(listeners(signal)).toBe(1);
    expect(await rt.close({ timeoutMs: 0 })).toMatchObject({ clean: false, abandoned: 1 });
    expect(await running).toBe('OMNI_ERR_WORKER_EXITED');
    expect(await waiting).toBe('OMNI_ERR_UNAVAILABLE');
    expect(listeners(signal)).toBe(0);
  });

  // A LinearRuntime call holds the signal itself and again through Runtime.run: both go.
  it('a LinearRuntime call, completed or invalid', async () => {
    const lr = await LinearRuntime.start({ backend: 'fixture', threads: 1, inFeatures: 8, outFeatures: 4 });
    try {
      const signal = new AbortController().signal;
      const calls = [lr.run(new Float32Array(8), { signal }), lr.run(new Float32Array(8), { signal })];
      expect(listeners(signal)).toBe(1);
      await Promise.all(calls);
      expect(listeners(signal)).toBe(0);
      expect(await codeOf(lr.run(new Float32Array(3), { signal }))).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(await codeOf(lr.run(new Float32Array(8), { signal, cost: -1 }))).toBe('OMNI_ERR_INVALID_COST');
      expect(listeners(signal)).toBe(0);
      expect(lr.report()).toMatchObject({ completed: 2, invalid: 2, depth: 0 });
    } finally {
      await lr.close();
    }
  });

  // Before: a LinearRuntime call followed a signal that had already aborted, and left its
  // listener on it (added after the one event, so never told, and never taken off).
  it('a call whose signal had already aborted, through Runtime.run and LinearRuntime.run', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1 } });
    const lr = await LinearRuntime.start({ backend: 'fixture', threads: 1, inFeatures: 8, outFeatures: 4 });
    try {
      const controller = new AbortController();
      controller.abort();
      const signal = controller.signal;
      expect(await codeOf(rt.run({ mode: 'echo', value: 1 }, { signal }))).toBe('OMNI_ERR_ABORTED');
      expect(await codeOf(lr.run(new Float32Array(8), { signal }))).toBe('OMNI_ERR_ABORTED');
      expect(listeners(signal)).toBe(0);
      expect(rt.report()).toMatchObject({ aborted: 1, depth: 0 });
      expect(lr.report()).toMatchObject({ aborted: 1, depth: 0 });
    } finally {
      await lr.close();
    }
  });
});
