/**
 * Values that structured clone refuses, on the way in or out. An input that cannot be posted
 * never reaches a worker: the caller hears OMNI_ERR_INVALID_ARGUMENT (not a dead worker); a
 * worker that dies of such an error of its own is a dead worker (OMNI_ERR_WORKER_EXITED). A
 * result that cannot be posted back ends its task with OMNI_ERR_TASK_FAILED, named after the
 * clone's DataCloneError. Either way the capacity comes back exactly once and the pool keeps serving.
 */
import { MessageChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { INVOKED, open, STARTED, waitFor } from './fixtures/runtime-control.js';
import { cleanup, control, gate, rejection, start } from './fixtures/runtime-harness.js';

afterEach(cleanup);

type Started = Awaited<ReturnType<typeof start>>;

/** The whole bound is free again and still serves (nothing leaked, nothing given back twice). */
async function boundIntact(rt: Started, requests: number): Promise<void> {
  const values = Array.from({ length: requests }, (_, i) => i);
  await expect(Promise.all(values.map((value) => rt.run({ mode: 'echo', value })))).resolves.toEqual(values);
  expect(rt.report()).toMatchObject({ depth: 0, units: 0, leaked: 0, state: 'ready' });
}

describe('an input that cannot be posted to a worker', () => {
  // A port or a stream not listed for transfer is refused with a TypeError
  // (ERR_MISSING_TRANSFERABLE_IN_TRANSFER_LIST), not a DataCloneError: no worker exited either.
  // (A buffer named twice in `transfer` is moved once: runtime-transfer.test.ts.)
  it('a function or an untransferred port in the input: OMNI_ERR_INVALID_ARGUMENT', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2, units: 4 } });
    const c = control();
    const counted = { mode: 'echo', control: c.buffer as SharedArrayBuffer };
    const { port1, port2 } = new MessageChannel();
    // One at a time: each holds 3 of the 4 units until its failure gives them back.
    const refusedInputs = [
      () => rt.run({ ...counted, value: { callback: () => 1 } }, { cost: 3 }),
      () => rt.run({ ...counted, value: port1 }, { cost: 3 }),
    ];
    try {
      for (const call of refusedInputs) {
        const err = await rejection(call());
        expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      }
    } finally {
      port1.close();
      port2.close();
    }
    expect(Atomics.load(c, INVOKED)).toBe(0);
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, failed: 2 });
    await boundIntact(rt, 2);
  });

  it('queued behind a running task: refused when its turn comes, the queue keeps moving', async () => {
    const rt = await start({ threads: 1, admission: { requests: 3 } });
    const a = control();
    const running = rt.run(gate(a, { value: 'a' }));
    await waitFor(a, STARTED, 1, running);
    const refused = rejection(rt.run({ mode: 'echo', value: () => 1 }));
    const after = rt.run({ mode: 'echo', value: 'after' });
    open(a);
    expect((await refused).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    await expect(Promise.all([running, after])).resolves.toEqual(['a', 'after']);
    await boundIntact(rt, 3);
  });

  // The refusal decides, not the loss: a thread lost while the call waited in the queue leaves
  // a plain post failure undecided (OMNI_ERR_WORKER_EXITED), but a clone refusal is never a dead
  // worker's, so the caller still hears that its input was at fault.
  it('queued while the thread ahead of it is lost: still OMNI_ERR_INVALID_ARGUMENT', async () => {
    const rt = await start({ threads: 1, admission: { requests: 3 } });
    const lost = rejection(rt.run({ mode: 'exit' }));
    const refused = rejection(rt.run({ mode: 'echo', value: () => 1 }));
    expect((await lost).code).toBe('OMNI_ERR_WORKER_EXITED');
    expect((await refused).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    await boundIntact(rt, 3);
  });
});

describe('a worker thread ended by its own clone refusal', () => {
  // The same coded TypeErrors a refused input rejects with here, but thrown (uncaught) in the
  // worker after the call reached it: the thread died in the call, so OMNI_ERR_WORKER_EXITED, as
  // for any other uncaught error, not OMNI_ERR_INVALID_ARGUMENT (the input was posted fine).
  it.each([
    ['a port not listed for transfer (ERR_MISSING_TRANSFERABLE_IN_TRANSFER_LIST)', 'port'],
    ['a plain object in the transfer list (ERR_INVALID_TRANSFER_OBJECT)', 'transfer-list'],
  ])('%s: OMNI_ERR_WORKER_EXITED; capacity back once', async (_what, value) => {
    const rt = await start({ threads: 1, admission: { requests: 2, units: 4 } });
    const c = control();
    const call = { mode: 'uncaught-post', value, control: c.buffer as SharedArrayBuffer } as const;
    const err = await rejection(rt.run(call, { cost: 3 }));
    expect(err.code).toBe('OMNI_ERR_WORKER_EXITED');
    expect(Atomics.load(c, INVOKED)).toBe(1); // the call did reach the worker
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, failed: 1 });
    await boundIntact(rt, 2);
  });
});

describe('a result that cannot be posted back', () => {
  it('OMNI_ERR_TASK_FAILED named DataCloneError; capacity back once', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2, units: 4 } });
    const unsendable = await rejection(rt.run({ mode: 'unsendable', value: 1 }, { cost: 3 }));
    expect(unsendable.code).toBe('OMNI_ERR_TASK_FAILED');
    expect(unsendable.name).toBe('DataCloneError');
    // A buffer named twice with ctx.transfer is moved once (a duplicate would not post).
    const twice = await rt.run<ArrayBuffer>({ mode: 'transfer-twice' }, { cost: 3 });
    expect(twice.byteLength).toBe(8);
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, failed: 1, completed: 1 });
    await boundIntact(rt, 2);
  });

  // Not objects, but no primitive that always posts either: the reply checks them like objects.
  it.each(['symbol', 'function'])(
    'a bare %s: OMNI_ERR_TASK_FAILED named DataCloneError; the thread serves on',
    async (value) => {
      const rt = await start({ threads: 1, admission: { requests: 2, units: 4 } });
      await rt.run({ mode: 'transfer-twice' }); // marks this thread: last-sent-length 0 here, -1 in a new one
      const err = await rejection(rt.run({ mode: 'unsendable', value }, { cost: 3 }));
      expect({ code: err.code, name: err.name }).toEqual({
        code: 'OMNI_ERR_TASK_FAILED',
        name: 'DataCloneError',
      });
      await expect(rt.run({ mode: 'last-sent-length' })).resolves.toBe(0); // the same thread
      expect(rt.report()).toMatchObject({ depth: 0, units: 0, failed: 1, completed: 2 });
      await boundIntact(rt, 2);
    },
  );

  it('a thrown object without a prototype still rejects with a readable message', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const err = await rejection(rt.run({ mode: 'throw-bare' }));
    expect(err.code).toBe('OMNI_ERR_TASK_FAILED');
    expect(err.message).toContain('null prototype');
    await boundIntact(rt, 2);
  });
});

describe("a handler that pushes into the context's transfer list, past ctx.transfer", () => {
  // ctx.transferList was the context's own array, writable by the handler: a buffer pushed twice
  // passed the reply's check (a non-empty buffer skips it) and reached piscina's post, which
  // threw there, so the thread died in the call (a new one served last-sent-length: -1). The
  // list is private now; a view or a SharedArrayBuffer pushed was already a coded failure.
  it.each([
    ['a buffer pushed twice', 'twice'],
    ['a view', 'view'],
    ['a SharedArrayBuffer', 'shared'],
  ])('%s: a coded failure of the call; the thread serves on; capacity back once', async (_what, value) => {
    const rt = await start({ threads: 1, admission: { requests: 2, units: 4 } });
    await rt.run({ mode: 'transfer-twice' }); // marks this thread: last-sent-length 0 here, -1 in a new one
    const err = await rejection(rt.run({ mode: 'push-transfer-list', value }, { cost: 3 }));
    expect(err.code).toBe('OMNI_ERR_TASK_FAILED');
    await expect(rt.run({ mode: 'last-sent-length' })).resolves.toBe(8);
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, failed: 1, completed: 2 });
    await boundIntact(rt, 2);
  });
});
