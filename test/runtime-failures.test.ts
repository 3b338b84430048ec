/**
 * A failing or dying worker: the caller sees a stable code, every unit of capacity comes back
 * (the worker's finally, or the main thread's reclaim when the worker died), and the pool
 * keeps serving. A fatal worker error moves the runtime to 'failed', and whenFailed() tells
 * whoever waits on it, with the same error as `failure`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BoundedAdmission } from '../src/admission/index.js';
import { NativeError } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { CancelWords } from '../src/runtime/cancel-words.js';
import { noOutcomes, PendingTask } from '../src/runtime/pending-task.js';
import { INVOKED, open, STARTED, waitFor } from './fixtures/runtime-control.js';
import {
  cleanup,
  codeOf,
  control,
  gate,
  rejection,
  start,
  turns,
  until,
} from './fixtures/runtime-harness.js';
import { FAIL_FATAL } from './fixtures/serve-gate-layout.js';
import { startGated } from './fixtures/serve-harness.js';

afterEach(cleanup);

/** Two rounds of `threads` concurrent calls all succeed (a dead thread has been replaced). */
async function keepsServing(rt: Awaited<ReturnType<typeof start>>, threads: number): Promise<void> {
  for (let round = 0; round < 2; round++) {
    const values = await Promise.all(
      Array.from({ length: threads }, (_, i) => rt.run({ mode: 'echo', value: i })),
    );
    expect(values).toEqual(Array.from({ length: threads }, (_, i) => i));
  }
  expect(rt.report().depth).toBe(0);
}

describe('a crashing task', () => {
  it('a thrown error with a code rejects with that code', async () => {
    const rt = await start({ threads: 2, admission: { requests: 4, units: 8 } });
    const err = await rejection(
      rt.run({ mode: 'throw-coded', code: 'X_BAD_INPUT', message: 'no such tensor' }, { cost: 3 }),
    );
    expect(err).toMatchObject({ code: 'X_BAD_INPUT', message: 'no such tensor' });
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, failed: 1, state: 'ready' });
    await keepsServing(rt, 2);
  });

  it('a thrown error without a code rejects OMNI_ERR_TASK_FAILED keeping the message', async () => {
    const rt = await start({ threads: 2, admission: { requests: 4 } });
    const err = await rejection(rt.run({ mode: 'throw-plain', message: 'the model said no' }));
    expect(err).toMatchObject({ code: 'OMNI_ERR_TASK_FAILED', message: 'the model said no' });
    expect(rt.report()).toMatchObject({ depth: 0, failed: 1, state: 'ready' });
    await keepsServing(rt, 2);
  });

  it('process.exit mid-task rejects OMNI_ERR_WORKER_EXITED and the claim is reclaimed', async () => {
    const rt = await start({ threads: 2, admission: { requests: 4, units: 8 } });
    const c = control();
    expect(await codeOf(rt.run({ mode: 'exit', control: c.buffer as SharedArrayBuffer }, { cost: 5 }))).toBe(
      'OMNI_ERR_WORKER_EXITED',
    );
    expect(Atomics.load(c, INVOKED)).toBe(1);
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, failed: 1, state: 'ready', leaked: 0 });
    await keepsServing(rt, 2);
  });

  it('an uncaught asynchronous error kills the worker: OMNI_ERR_WORKER_EXITED, capacity back', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    expect(await codeOf(rt.run({ mode: 'uncaught' }))).toBe('OMNI_ERR_WORKER_EXITED');
    expect(rt.report()).toMatchObject({ depth: 0, failed: 1, state: 'ready' });
    await keepsServing(rt, 1);
  });

  it('exit during a blocking native-like call, after the caller aborted: held until then, then returned', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2, units: 4 } });
    const c = control();
    const ac = new AbortController();
    const call = rt.run(
      { mode: 'block-exit', control: c.buffer as SharedArrayBuffer },
      { signal: ac.signal, cost: 4 },
    );
    await waitFor(c, STARTED, 1, call);
    ac.abort();
    expect(await codeOf(call)).toBe('OMNI_ERR_ABORTED');
    expect(rt.report()).toMatchObject({ depth: 1, units: 4 });
    // The thread cannot be interrupted inside its call; capacity waits for it to end.
    expect(await codeOf(rt.run({ mode: 'echo' }, { cost: 1 }))).toBe('OMNI_ERR_REJECTED');

    open(c); // the "native call" returns and the thread exits; its claim is reclaimed then
    await until(() => rt.report().depth === 0, 'depth 0');
    await expect(rt.run({ mode: 'echo', value: 'after' }, { cost: 4 })).resolves.toBe('after');
    expect(rt.report()).toMatchObject({
      depth: 0,
      units: 0,
      aborted: 1,
      refused: 1,
      completed: 1,
      leaked: 0,
    });
  });

  it('exit during a blocking native-like call rejects its waiting caller OMNI_ERR_WORKER_EXITED', async () => {
    const rt = await start({ threads: 2, admission: { requests: 2 } });
    const c = control();
    const call = rt.run({ mode: 'block-exit', control: c.buffer as SharedArrayBuffer });
    await waitFor(c, STARTED, 1, call);
    expect(rt.report().depth).toBe(1);
    open(c);
    expect(await codeOf(call)).toBe('OMNI_ERR_WORKER_EXITED');
    expect(rt.report()).toMatchObject({ depth: 0, failed: 1, state: 'ready' });
    await keepsServing(rt, 2);
  });

  it('several deaths in a row: every one reclaimed, the pool respawns each time', async () => {
    const rt = await start({ threads: 2, admission: { requests: 8, units: 80 } });
    const codes = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        rt.run({ mode: i % 2 ? 'exit' : 'throw-coded', code: 'X_ODD' }, { cost: 10 }).then(
          () => 'ok',
          (err: { code?: string }) => err.code,
        ),
      ),
    );
    expect(codes).toEqual([
      'X_ODD',
      'OMNI_ERR_WORKER_EXITED',
      'X_ODD',
      'OMNI_ERR_WORKER_EXITED',
      'X_ODD',
      'OMNI_ERR_WORKER_EXITED',
    ]);
    expect(rt.report()).toMatchObject({ depth: 0, units: 0, failed: 6, leaked: 0 });
    await keepsServing(rt, 2);
  });
});

describe('a fatal worker error', () => {
  it("moves the runtime to 'failed'; later runs reject OMNI_ERR_UNAVAILABLE", async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const err = await rejection(rt.run({ mode: 'fatal', code: 'X_CONTEXT_LOST' }));
    expect(err).toMatchObject({ code: 'X_CONTEXT_LOST' });
    expect(rt.state).toBe('failed');
    expect(rt.failure).toBe(err);
    const never = control();
    const unavailable = await rejection(rt.run({ mode: 'echo', control: never.buffer as SharedArrayBuffer }));
    expect(unavailable).toMatchObject({ code: 'OMNI_ERR_UNAVAILABLE', state: 'failed' });
    expect(rt.report()).toMatchObject({ state: 'failed', depth: 0, failed: 1 });
    expect(Atomics.load(never, INVOKED)).toBe(0);
    await rt.close();
    expect(rt.state).toBe('stopped');
  });

  it('a fatal error from a native-style error class (OMNI_ERR_NATIVE) is rebuilt as NativeError', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const err = await rejection(rt.run({ mode: 'fatal', code: 'OMNI_ERR_NATIVE', message: 'context lost' }));
    expect(err).toBeInstanceOf(NativeError);
    expect(err).toMatchObject({ name: 'NativeError', code: 'OMNI_ERR_NATIVE', fatal: true });
    expect(rt.state).toBe('failed');
  });

  it('the first fatal error stays the failure: a later one, from a call queued before, does not replace it', async () => {
    const rt = await start({ threads: 1 });
    const a = control();
    const first = rt.run(gate(a));
    const fatals = [rejection(rt.run({ mode: 'fatal', code: 'X_FIRST' }))];
    fatals.push(rejection(rt.run({ mode: 'fatal', code: 'X_SECOND' })));
    open(a);
    await first;
    const [one, two] = await Promise.all(fatals);
    expect([one?.code, two?.code]).toEqual(['X_FIRST', 'X_SECOND']);
    expect(rt.state).toBe('failed');
    expect(rt.failure).toBe(one);
  });

  it("during close()'s drain: the runtime stays 'draining', records the failure and ends 'stopped'", async () => {
    const rt = await start({ threads: 1 });
    const a = control();
    const first = rt.run(gate(a));
    const fatal = rejection(rt.run({ mode: 'fatal', code: 'X_DURING_DRAIN' }));
    const closing = rt.close();
    expect(rt.state).toBe('draining');
    open(a);
    await first;
    const err = await fatal;
    expect(rt.state).toBe('draining');
    expect(rt.failure).toBe(err);
    await closing;
    expect(rt.state).toBe('stopped');
  });

  // Why 'draining' and not 'failed' there: close() has already refused every call not yet
  // admitted (a waiter is woken with it), so no permit can be granted after the fatal error for
  // a 'failed' state to refuse; the calls admitted before close() run either way, as queued
  // calls do after a fatal error before close(); and the close hooks still run.
  it("during close()'s drain: nothing is admitted after it, close() resolves clean and the close hooks run", async () => {
    const closed = control();
    const rt = await start({
      worker: builtModuleUrl('test/fixtures/close-count-worker.js'),
      threads: 1,
      admission: { requests: 2, wait: true },
      workerData: { closed: closed.buffer },
    });
    const a = control();
    const first = rt.run(gate(a));
    await waitFor(a, STARTED, 1, first);
    const fatal = rejection(rt.run({ mode: 'fatal', code: 'X_DURING_DRAIN' }));
    const never = control();
    const waiter = rejection(rt.run({ mode: 'echo', control: never.buffer as SharedArrayBuffer }));
    const closing = rt.close();
    expect(await waiter).toMatchObject({ code: 'OMNI_ERR_UNAVAILABLE', state: 'draining' });
    open(a);
    await first;
    const err = await fatal;
    expect(rt.state).toBe('draining');
    expect(rt.failure).toBe(err);
    expect(await codeOf(rt.run({ mode: 'echo' }))).toBe('OMNI_ERR_UNAVAILABLE');
    await expect(closing).resolves.toEqual({ clean: true, abandoned: 0 });
    expect(Atomics.load(never, INVOKED)).toBe(0);
    expect(Atomics.load(closed, INVOKED)).toBe(1);
    expect(rt.report()).toMatchObject({
      state: 'stopped',
      depth: 0,
      completed: 1,
      failed: 1,
      unavailable: 2,
    });
  });
});

/** Whether `promise` has settled once callbacks queued on this thread so far have run. */
async function settledYet(promise: Promise<unknown>): Promise<boolean> {
  const pending = Symbol('pending');
  await turns();
  return (await Promise.race([promise, Promise.resolve(pending)])) !== pending;
}

describe('whenFailed()', () => {
  it('resolves with `failure` before the failing call rejects, and is the same promise on every call', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const told = rt.whenFailed();
    expect(rt.whenFailed()).toBe(told);
    expect(await settledYet(told)).toBe(false);
    const order: string[] = [];
    void told.then(() => order.push('told'));
    const err = await rejection(
      rt.run({ mode: 'fatal', code: 'X_CONTEXT_LOST' }).finally(() => order.push('caller')),
    );
    expect(order).toEqual(['told', 'caller']);
    expect(await told).toBe(err);
    expect(rt.failure).toBe(err);
    expect(rt.whenFailed()).toBe(told);
    await rt.close();
    expect(rt.whenFailed()).toBe(told);
  });

  it('keeps the first failure, as `failure` does', async () => {
    const rt = await start({ threads: 1 });
    const a = control();
    const first = rt.run(gate(a));
    const one = rejection(rt.run({ mode: 'fatal', code: 'X_FIRST' }));
    const two = rejection(rt.run({ mode: 'fatal', code: 'X_SECOND' }));
    open(a);
    await first;
    await two;
    expect(await rt.whenFailed()).toBe(await one);
  });

  it('a sticky native error through a LinearRuntime (gated worker): lr.runtime.whenFailed() resolves with it', async () => {
    const gated = await startGated({ threads: 1, open: true, inFeatures: 4, outFeatures: 2 });
    try {
      const told = gated.lr.runtime.whenFailed();
      const err = await rejection(gated.lr.run(new Float32Array([FAIL_FATAL, 0, 0, 0])));
      expect(err).toMatchObject({ code: 'OMNI_ERR_NATIVE', fatal: true });
      expect(await told).toBe(err);
      expect(gated.lr.runtime.failure).toBe(err);
      expect(gated.lr.report().state).toBe('failed');
    } finally {
      await gated.lr.close({ timeoutMs: 5_000 });
    }
  });

  it('still pending after a clean close of a runtime that never failed', async () => {
    const rt = await start({ threads: 2, admission: { requests: 4 } });
    const told = rt.whenFailed();
    await expect(rt.run({ mode: 'echo', value: 1 })).resolves.toBe(1);
    expect(await codeOf(rt.run({ mode: 'throw-coded', code: 'X_NOT_FATAL' }))).toBe('X_NOT_FATAL');
    await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
    expect(rt.state).toBe('stopped');
    expect(await settledYet(told)).toBe(false);
    expect(rt.failure).toBeUndefined();
  });

  // The rule: it follows `failure`, not `state`. A fatal error in a call close() drains still
  // resolves it, though the runtime stays 'draining' and ends 'stopped' (see 'a fatal worker error').
  it("a failure during close()'s drain resolves it while the state stays 'draining'", async () => {
    const rt = await start({ threads: 1 });
    const a = control();
    const first = rt.run(gate(a));
    const fatal = rejection(rt.run({ mode: 'fatal', code: 'X_DURING_DRAIN' }));
    const closing = rt.close();
    const told = rt.whenFailed();
    expect(await settledYet(told)).toBe(false);
    open(a);
    await first;
    const err = await fatal;
    expect(await told).toBe(err);
    expect(rt.state).toBe('draining');
    await closing;
    expect(rt.state).toBe('stopped');
  });
});

describe('a call whose work ends without a reply', () => {
  // Who gave the capacity back tells a thread that died mid-task from a reply lost after the
  // worker's finally had released the claim (the work itself ended).
  function pendingTask(admission: BoundedAdmission) {
    const outcomes = noOutcomes();
    const owner = {
      admission,
      cancel: new CancelWords(1),
      outcomes,
      fail: () => {},
      ended: () => {},
      live: new Set<PendingTask>(),
      losses: { count: 0 },
    };
    const admitted = admission.tryAdmit(1);
    if (!admitted.ok) throw new Error('expected room');
    const claim = admitted.toClaim();
    let settle: (err: unknown) => void = () => {};
    const settled = new Promise<unknown>((resolve) => {
      settle = resolve;
    });
    const task = new PendingTask(owner, claim, settle, settle, undefined, undefined);
    return { claim, task, settled, outcomes, owner };
  }

  it('the worker had released its claim: OMNI_ERR_TASK_FAILED', async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    const { claim, task, settled, outcomes } = pendingTask(admission);
    expect(admission.reclaim(claim)).toBe(true); // what the worker's finally does
    // The freed slot is taken by the next call before the failure arrives: it keeps its room.
    const next = admission.tryAdmit(1);
    if (!next.ok) throw new Error('expected room');
    next.toClaim();
    task.follow(Promise.reject(new Error('the reply could not be posted')));
    expect(await settled).toMatchObject({ code: 'OMNI_ERR_TASK_FAILED' });
    expect(outcomes.failed).toBe(1);
    expect(admission.report().depth).toBe(1);
  });

  it('nobody had released it (the thread died mid-task): OMNI_ERR_WORKER_EXITED, reclaimed here', async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    const { task, settled, outcomes, owner } = pendingTask(admission);
    expect(admission.report().depth).toBe(1);
    owner.losses.count++; // piscina removes the thread in the turn it rejects the thread's call
    task.follow(Promise.reject(new Error('worker exited with code 1')));
    expect(await settled).toMatchObject({ code: 'OMNI_ERR_WORKER_EXITED' });
    expect(outcomes.failed).toBe(1);
    expect(admission.report().depth).toBe(0);
  });

  it('nobody had released it and no thread was lost (its post failed): OMNI_ERR_INVALID_ARGUMENT, reclaimed here', async () => {
    // The same error a dead thread's call gets: only the lost thread tells them apart.
    const admission = new BoundedAdmission({ requests: 1 });
    const { task, settled, outcomes } = pendingTask(admission);
    const thrown = new Error('worker exited with code 1');
    task.follow(Promise.reject(thrown));
    expect(await settled).toMatchObject({ code: 'OMNI_ERR_INVALID_ARGUMENT', cause: thrown });
    expect(outcomes.failed).toBe(1);
    expect(admission.report().depth).toBe(0);
  });
});

describe('a pool that loses every thread', () => {
  /** One thread whose replacement cannot start: the first exit loses the whole pool. */
  const startFragile = () =>
    start({
      worker: builtModuleUrl('test/fixtures/runtime-restart-fails-worker.js'),
      workerData: { loads: new SharedArrayBuffer(4) },
      threads: 1,
      admission: { requests: 4 },
    });

  it('fails the runtime and rejects queued calls, returning their capacity, when no replacement can start', async () => {
    const rt = await startFragile();
    const dying = rt.run({ exit: true });
    const queued = rt.run({}); // behind the dying call, on the only thread
    expect(await codeOf(dying)).toBe('OMNI_ERR_WORKER_EXITED');
    expect(await codeOf(queued)).toBe('OMNI_ERR_WORKER_EXITED');
    await until(() => rt.report().state === 'failed', "state 'failed'");
    expect(rt.report()).toMatchObject({ depth: 0, state: 'failed' });
    expect(await codeOf(rt.run({}))).toBe('OMNI_ERR_UNAVAILABLE');
    expect(rt.failure).toMatchObject({ code: 'OMNI_ERR_WORKER_EXITED' });
    await rt.close();
    expect(rt.state).toBe('stopped');
  });

  it('whenFailed() resolves with the failure once the pool is lost, with nothing polled', async () => {
    const rt = await startFragile();
    const told = rt.whenFailed();
    expect(await codeOf(rt.run({ exit: true }))).toBe('OMNI_ERR_WORKER_EXITED');
    const err = await told;
    expect(err).toMatchObject({ code: 'OMNI_ERR_WORKER_EXITED' });
    expect(rt.failure).toBe(err);
    expect(rt.state).toBe('failed');
  });

  it('while close() drains: queued calls reject, their capacity returns, and close() resolves', async () => {
    const rt = await startFragile();
    const dying = codeOf(rt.run({ exit: true }));
    const queued = codeOf(rt.run({})); // behind the dying call, on the only thread
    const closing = rt.close(); // no timeout: only abandoning the lost pool can end the drain
    expect(await dying).toBe('OMNI_ERR_WORKER_EXITED');
    expect(await queued).toBe('OMNI_ERR_WORKER_EXITED');
    await closing;
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, leaked: 0 });
    expect(rt.failure).toMatchObject({ code: 'OMNI_ERR_WORKER_EXITED' });
  });
});

describe('close() options', () => {
  it('rejects an invalid timeoutMs with OMNI_ERR_INVALID_ARGUMENT and accepts 0', async () => {
    const rt = await start({ threads: 1 });
    expect(await codeOf(rt.close({ timeoutMs: -1 }))).toBe('OMNI_ERR_INVALID_ARGUMENT');
    // NaN would arm a timer that Node fires after 1 ms: a forced close nobody asked for.
    expect(await codeOf(rt.close({ timeoutMs: Number.NaN }))).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(rt.state).toBe('ready');
    await rt.close({ timeoutMs: 0 });
    expect(rt.state).toBe('stopped');
  });
});

describe("a worker's own uncaughtException handler", () => {
  it('takes over such errors: the thread lives on and the calls complete', async () => {
    const rt = await start({
      worker: builtModuleUrl('test/fixtures/runtime-user-uncaught-worker.js'),
      threads: 1,
    });
    await expect(rt.run({})).resolves.toEqual(['handled by the user']);
    await expect(rt.run({})).resolves.toEqual(['handled by the user', 'handled by the user']);
    expect(rt.report()).toMatchObject({ state: 'ready', depth: 0, completed: 2, failed: 0 });
  });
});
