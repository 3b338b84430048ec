/**
 * The runtime's bound: refusals never reach a worker, 'too-large' is distinct, wait mode
 * queues FIFO and honours the caller's signal and deadline, and the serial default (no
 * admission) never refuses and runs in submission order.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_CLAIM_SLOTS } from '../src/admission/layout.js';
import { INVOKED, newControl, open, readLog, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, codeOf, control, gate, rejection, start, until } from './fixtures/runtime-harness.js';

afterEach(cleanup);

function counted(c: Int32Array, value?: unknown) {
  return { mode: 'echo' as const, control: c.buffer as SharedArrayBuffer, value };
}

function logged(c: Int32Array, value: number) {
  return { mode: 'log' as const, control: c.buffer as SharedArrayBuffer, value };
}

describe('refusing admission', () => {
  it('a request over the request bound is refused with its reason and never reaches a worker', async () => {
    const rt = await start({ threads: 2, admission: { requests: 2 } });
    const a = control();
    const b = control();
    const never = control();
    const first = rt.run(gate(a, { value: 'a' }));
    const second = rt.run(gate(b, { value: 'b' }));
    const err = await rejection(rt.run(counted(never)));
    expect(err).toMatchObject({
      code: 'OMNI_ERR_REJECTED',
      reason: 'requests',
      depth: 2,
      capacity: 2,
      rejected: 1,
    });
    expect(rt.report()).toMatchObject({ depth: 2, capacity: 2, rejected: 1, refused: 1 });

    open(a);
    open(b);
    await expect(Promise.all([first, second])).resolves.toEqual(['a', 'b']);
    await until(() => rt.report().depth === 0, 'depth 0');
    expect(Atomics.load(never, INVOKED)).toBe(0);
    expect(rt.report()).toMatchObject({ completed: 2, refused: 1, rejected: 1 });
  });

  it('units: a cost that does not fit now is refused (units); one larger than the ceiling is too-large', async () => {
    const rt = await start({ threads: 1, admission: { requests: 4, units: 10 } });
    const a = control();
    const never = control();
    const held = rt.run(gate(a, { value: 'held' }), { cost: 8 });
    await waitFor(a, STARTED, 1, held);
    expect(rt.report()).toMatchObject({ depth: 1, units: 8, unitCapacity: 10 });

    const units = await rejection(rt.run(counted(never), { cost: 3 }));
    expect(units).toMatchObject({ code: 'OMNI_ERR_REJECTED', reason: 'units', depth: 1, capacity: 4 });
    const tooLarge = await rejection(rt.run(counted(never), { cost: 11 }));
    expect(tooLarge).toMatchObject({ code: 'OMNI_ERR_TOO_LARGE', cost: 11, unitCapacity: 10 });
    // What still fits is admitted alongside: 8 + 2 = the whole ceiling.
    const fits = rt.run({ mode: 'echo', value: 'fits' }, { cost: 2 });
    expect(rt.report()).toMatchObject({ depth: 2, units: 10, rejected: 2, refused: 2 });

    open(a);
    await expect(Promise.all([held, fits])).resolves.toEqual(['held', 'fits']);
    await until(() => rt.report().depth === 0, 'depth 0');
    expect(rt.report()).toMatchObject({ units: 0, completed: 2 });
    expect(Atomics.load(never, INVOKED)).toBe(0);
    // A cost exactly equal to the ceiling is admitted when empty.
    await expect(rt.run({ mode: 'echo', value: 'whole' }, { cost: 10 })).resolves.toBe('whole');
  });

  it('an invalid cost rejects OMNI_ERR_INVALID_COST and takes nothing', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2, units: 10 } });
    const never = control();
    for (const cost of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      expect(await codeOf(rt.run(counted(never), { cost }))).toBe('OMNI_ERR_INVALID_COST');
    }
    for (const cost of ['1', null]) {
      expect(await codeOf(rt.run(counted(never), { cost: cost as unknown as number }))).toBe(
        'OMNI_ERR_INVALID_COST',
      );
    }
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, rejected: 0 });
    expect(Atomics.load(never, INVOKED)).toBe(0);
  });

  it('invalid run options reject OMNI_ERR_INVALID_ARGUMENT', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    expect(await codeOf(rt.run({ mode: 'echo' }, { deadlineMs: 0 }))).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(await codeOf(rt.run({ mode: 'echo' }, { deadlineMs: -5 }))).toBe('OMNI_ERR_INVALID_ARGUMENT');
    const notBuffers = [new Uint8Array(4)] as unknown as ArrayBuffer[];
    expect(await codeOf(rt.run({ mode: 'echo' }, { transfer: notBuffers }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    expect(rt.report().depth).toBe(0);
  });

  it('admission.requests may be as many as there are claim slots, not one more (OMNI_ERR_INVALID_BOUND)', async () => {
    const rt = await start({ threads: 1, admission: { requests: MAX_CLAIM_SLOTS } });
    await expect(rt.run({ mode: 'echo', value: 'fits' })).resolves.toBe('fits');
    expect(rt.report()).toMatchObject({ capacity: MAX_CLAIM_SLOTS, depth: 0 });
    const over = start({ threads: 1, admission: { requests: MAX_CLAIM_SLOTS + 1 } });
    expect(await codeOf(over)).toBe('OMNI_ERR_INVALID_BOUND');
  });

  it('the bound is read once: the requests checked are the requests the runtime admits', async () => {
    // Read again after the claim-slot check, this getter gave the runtime 4x the slots it has.
    let reads = 0;
    const admission = {
      get requests(): number {
        return reads++ === 0 ? 4 : MAX_CLAIM_SLOTS * 4;
      },
    };
    const rt = await start({ threads: 1, admission });
    expect(rt.report()).toMatchObject({ capacity: 4, depth: 0 });
    expect(reads).toBe(1);
  });
});

describe('wait mode (admission.wait)', () => {
  it('queues FIFO for room instead of refusing', async () => {
    const rt = await start({ threads: 2, admission: { requests: 1, wait: true } });
    const a = control();
    const log = control();
    const first = rt.run(gate(a, { value: 'a' }));
    await waitFor(a, STARTED, 1, first);
    const queued = [1, 2, 3, 4, 5].map((v) => rt.run(logged(log, v)));
    await until(() => rt.report().waiting === 5, '5 waiters');
    expect(rt.report()).toMatchObject({ depth: 1, waiting: 5, rejected: 0 });

    open(a);
    await expect(Promise.all([first, ...queued])).resolves.toEqual(['a', 1, 2, 3, 4, 5]);
    expect(readLog(log)).toEqual([1, 2, 3, 4, 5]);
    expect(rt.report()).toMatchObject({ depth: 0, waiting: 0, rejected: 0, refused: 0, completed: 6 });
  });

  it('a large request at the head is not starved by small ones that would fit', async () => {
    const rt = await start({ threads: 2, admission: { requests: 4, units: 10, wait: true } });
    const a = control();
    const log = control();
    const held = rt.run(gate(a), { cost: 6 });
    await waitFor(a, STARTED, 1, held);
    const large = rt.run(logged(log, 10), { cost: 10 });
    await until(() => rt.report().waiting === 1, 'large waiting');
    const small = rt.run(logged(log, 1), { cost: 1 });
    await until(() => rt.report().waiting === 2, 'small waiting');
    expect(rt.report()).toMatchObject({ depth: 1, units: 6 });

    open(a);
    await Promise.all([held, large, small]);
    expect(readLog(log)).toEqual([10, 1]);
  });

  it('a waiter whose caller aborts leaves the queue and never runs', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1, wait: true } });
    const a = control();
    const never = control();
    const log = control();
    const first = rt.run(gate(a, { value: 'a' }));
    await waitFor(a, STARTED, 1, first);
    const ac = new AbortController();
    const aborted = rt.run(counted(never), { signal: ac.signal });
    const behind = rt.run(logged(log, 7));
    await until(() => rt.report().waiting === 2, '2 waiters');

    ac.abort();
    const err = await rejection(aborted);
    expect(err).toMatchObject({ name: 'AbortError', code: 'OMNI_ERR_ABORTED' });
    expect(rt.report()).toMatchObject({ waiting: 1, depth: 1, aborted: 1, rejected: 0 });

    open(a);
    await expect(Promise.all([first, behind])).resolves.toEqual(['a', 7]);
    expect(Atomics.load(never, INVOKED)).toBe(0);
    expect(rt.report()).toMatchObject({ depth: 0, waiting: 0 });
  });

  it('a waiter past its deadline rejects OMNI_ERR_DEADLINE and never runs', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1, wait: true } });
    const a = control();
    const never = control();
    const first = rt.run(gate(a, { value: 'a' }));
    await waitFor(a, STARTED, 1, first);
    // The gate stays closed until this caller has given up: it can only time out waiting.
    expect(await codeOf(rt.run(counted(never), { deadlineMs: 5 }))).toBe('OMNI_ERR_DEADLINE');
    expect(rt.report()).toMatchObject({ waiting: 0, depth: 1, deadline: 1 });

    open(a);
    await expect(first).resolves.toBe('a');
    await expect(rt.run({ mode: 'echo', value: 'b' })).resolves.toBe('b');
    expect(Atomics.load(never, INVOKED)).toBe(0);
    expect(rt.report()).toMatchObject({ depth: 0, completed: 2, deadline: 1 });
  });

  it('too-large is refused at once even in wait mode', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2, units: 4, wait: true } });
    const never = control();
    expect(await codeOf(rt.run(counted(never), { cost: 5 }))).toBe('OMNI_ERR_TOO_LARGE');
    expect(rt.report()).toMatchObject({ depth: 0, waiting: 0, rejected: 1, refused: 1 });
    expect(Atomics.load(never, INVOKED)).toBe(0);
  });
});

describe('the serial default (no admission)', () => {
  it('never refuses a burst of 100 and runs it in submission order', async () => {
    const rt = await start({ threads: 1 });
    const log = newControl();
    const calls = Array.from({ length: 100 }, (_, i) => rt.run(logged(log, i)));
    const values = await Promise.all(calls);
    const order = Array.from({ length: 100 }, (_, i) => i);
    expect(values).toEqual(order);
    expect(readLog(log)).toEqual(order);
    expect(rt.report()).toMatchObject({ capacity: null, rejected: 0, refused: 0, completed: 100, depth: 0 });
  });

  it('keeps submission order behind a running task, with two threads', async () => {
    const rt = await start({ threads: 2 });
    const a = control();
    const log = newControl();
    const first = rt.run(gate(a));
    await waitFor(a, STARTED, 1, first);
    // One thread is held; the other runs the burst one at a time, in order.
    const values = await Promise.all(Array.from({ length: 50 }, (_, i) => rt.run(logged(log, i))));
    expect(values).toEqual(readLog(log));
    expect(readLog(log)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    open(a);
    await first;
    expect(rt.report()).toMatchObject({ capacity: null, rejected: 0, depth: 0 });
  });
});
