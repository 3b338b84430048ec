/**
 * The worker-side API: defineWorker's checks, a replacement thread whose init failed, results
 * that cannot be posted, piscina's own move() both ways, ctx.cancelled by the worker's clock,
 * ctx.transfer's checks, and the codes of errors a handler throws from anywhere.
 */
import { move, Piscina } from 'piscina';
import { afterEach, describe, expect, it } from 'vitest';
import { defineWorker } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { cleanup, codeOf, control, rejection, start } from './fixtures/runtime-harness.js';
import { thrownCode } from './fixtures/thrown.js';

afterEach(cleanup);

const API_WORKER = builtModuleUrl('test/fixtures/worker-api-worker.js');

/** How a call ended: its value, or its error's code. */
async function outcome(call: Promise<unknown>): Promise<{ value?: unknown; code?: unknown }> {
  try {
    return { value: await call };
  } catch (err) {
    return { code: (err as { code?: unknown }).code };
  }
}

describe('init on a replacement thread', () => {
  it('a replacement thread whose init threw never runs the handler: its call rejects with the init error and the runtime fails', async () => {
    const loads = new SharedArrayBuffer(8);
    const rt = await start({
      worker: builtModuleUrl('test/fixtures/replacement-init-throws-worker.js'),
      workerData: { loads },
      threads: 1,
      admission: { requests: 4 },
    });
    const dying = rt.run({ exit: true });
    const next = rt.run({}); // runs on the replacement thread, whose init threw X_INIT_AGAIN
    expect(await codeOf(dying)).toBe('OMNI_ERR_WORKER_EXITED');
    const after = await outcome(next);
    const words = new Int32Array(loads);
    expect(Atomics.load(words, 0)).toBe(2); // the replacement did run init (and it threw)
    expect(Atomics.load(words, 1)).toBe(0); // ...so the handler must not have run there
    expect(after.code).toBe('X_INIT_AGAIN');
    // A thread that cannot serve fails the runtime, as the same error would have failed start().
    expect(rt.report().state).toBe('failed');
    expect(await codeOf(rt.run({}))).toBe('OMNI_ERR_UNAVAILABLE');
  });
});

describe('a result that cannot be posted back', () => {
  it('does not wedge a thread whose worker owns uncaught exceptions', async () => {
    const rt = await start({
      worker: builtModuleUrl('test/fixtures/own-uncaught-worker.js'),
      threads: 1,
      admission: { requests: 2 },
    });
    // deadlineMs only bounds a hang: either call settles at once when the runtime works. Not a
    // few seconds (nor startTimeoutMs): a loaded machine that took that long to start the thread,
    // or a call, failed the test (a call whose deadline passed before it started is skipped).
    expect(await codeOf(rt.run({ mode: 'unsendable' }, { deadlineMs: 30_000 }))).toBe('OMNI_ERR_TASK_FAILED');
    await expect(rt.run({ mode: 'echo', value: 7 }, { deadlineMs: 30_000 })).resolves.toBe(7);
    expect(rt.report()).toMatchObject({ depth: 0, running: 0, queued: 0 });
  });

  it('still runs the close hook of the thread that tried to post it', async () => {
    const counts = new SharedArrayBuffer(8);
    const rt = await start({ worker: API_WORKER, workerData: { counts }, threads: 1 });
    expect(await codeOf(rt.run({ mode: 'unsendable' }))).toBe('OMNI_ERR_TASK_FAILED');
    await expect(rt.run({ mode: 'echo', value: 1 })).resolves.toBe(1);
    await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
    const [inits, closes] = Array.from(new Int32Array(counts));
    // Every init that succeeded is matched by a close (what it took is freed); 0 = 0 proves nothing.
    expect(inits).toBeGreaterThan(0);
    expect(closes).toBe(inits);
  });
});

describe("piscina's own move()", () => {
  it('returned by a handler: the caller gets the buffer, not an empty object', async () => {
    const rt = await start({ worker: API_WORKER, threads: 1 });
    const got = await outcome(rt.run({ mode: 'piscina-move' }));
    expect(got.code).toBeUndefined();
    expect(got.value).toBeInstanceOf(ArrayBuffer);
    expect(Array.from(new Uint8Array(got.value as ArrayBuffer))).toEqual([1, 2, 3, 4]);
  });

  it('given as the input: the worker gets the buffer, moved', async () => {
    const rt = await start({ worker: API_WORKER, threads: 1 });
    const buffer = new Uint8Array([9, 8, 7]).buffer;
    const echoed = await rt.run<ArrayBuffer>(move(buffer));
    expect(buffer.byteLength).toBe(0); // moved, not copied
    expect(Array.from(new Uint8Array(echoed))).toEqual([9, 8, 7]);
  });

  it("an input with only one of piscina's two symbols is no Transferable: it is sent as itself", async () => {
    const rt = await start({ worker: API_WORKER, threads: 1 });
    const inner = { mode: 'echo', value: 'inner' };
    const valueOnly = { mode: 'echo', value: 'outer', [Piscina.valueSymbol]: inner };
    await expect(rt.run(valueOnly)).resolves.toBe('outer');
    const listOnly = { mode: 'echo', value: 'outer', [Piscina.transferableSymbol]: [] };
    await expect(rt.run(listOnly)).resolves.toBe('outer');
  });

  it('a Transferable input that lists nothing to move (null) is sent as its value, copied', async () => {
    const rt = await start({ worker: API_WORKER, threads: 1 });
    const buffer = new Uint8Array([5, 6]).buffer;
    const input = { [Piscina.transferableSymbol]: null, [Piscina.valueSymbol]: buffer };
    const echoed = await rt.run<ArrayBuffer>(input);
    expect(Array.from(new Uint8Array(echoed))).toEqual([5, 6]);
    expect(buffer.byteLength).toBe(2);
  });
});

describe('ctx.cancelled', () => {
  it('is true once the deadline has passed, even while the main thread is busy', async () => {
    const rt = await start({ worker: API_WORKER, threads: 1, admission: { requests: 2 } });
    const seen = control();
    // The task is posted synchronously (an idle thread), then this thread blocks, as an
    // overloaded event loop would: its deadline timer cannot fire until the worker has looked.
    // The worker moves its own clock past the deadline: a real deadline short enough to wait
    // out was sometimes past before the thread even started the task, which then never ran.
    const call = rt.run(
      { mode: 'deadline-observe', control: seen.buffer as SharedArrayBuffer },
      { deadlineMs: 60_000 },
    );
    Atomics.wait(seen, 0, 0, 10_000);
    await outcome(call);
    expect(Atomics.load(seen, 0)).toBe(1); // 1: ctx.cancelled was true past ctx.deadlineAt
  });
});

describe('ctx.transfer', () => {
  it('refuses a SharedArrayBuffer with a coded error', async () => {
    const rt = await start({ worker: API_WORKER, threads: 1 });
    await expect(rt.run({ mode: 'transfer-sab' })).resolves.toEqual({
      threw: true,
      code: 'OMNI_ERR_INVALID_ARGUMENT',
    });
  });

  // What the value is, not its prototype chain: a handler running code in a vm context moves
  // that context's buffers, and an object that only inherits ArrayBuffer.prototype is refused
  // where it is listed, not when the reply fails to post.
  it('moves an ArrayBuffer from another realm and refuses one that only looks like it', async () => {
    const rt = await start({ worker: API_WORKER, threads: 1 });
    const moved = await rt.run<ArrayBuffer>({ mode: 'transfer-vm' });
    expect([...new Uint8Array(moved)]).toEqual([1, 2, 3, 4]);
    await expect(rt.run({ mode: 'transfer-fake' })).resolves.toEqual({
      threw: true,
      code: 'OMNI_ERR_INVALID_ARGUMENT',
    });
    expect(rt.report()).toMatchObject({ completed: 2, failed: 0 });
  });
});

describe('errors a handler throws', () => {
  it('an error-like object with a string code keeps its code', async () => {
    const rt = await start({ worker: API_WORKER, threads: 1 });
    const err = await rejection(rt.run({ mode: 'throw-object', code: 'X_PLAIN_OBJECT' }));
    expect(err.code).toBe('X_PLAIN_OBJECT');
  });

  it('an Error from another realm (node:vm) keeps its code', async () => {
    const rt = await start({ worker: API_WORKER, threads: 1 });
    const err = await rejection(rt.run({ mode: 'throw-vm' }));
    expect(err.code).toBe('X_VM');
  });
});

describe('defineWorker options', () => {
  it('an init or close hook that is not a function fails where it is written', () => {
    const handler = async (): Promise<number> => 1;
    expect(thrownCode(() => defineWorker(handler, { init: 42 as unknown as () => void }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    // null is no function either: only a missing (undefined) hook is left out.
    expect(thrownCode(() => defineWorker(handler, { init: null as unknown as () => void }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    expect(thrownCode(() => defineWorker(handler, { close: 'stop' as unknown as () => void }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    expect(thrownCode(() => defineWorker(handler, null as unknown as {}))).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  it('a handler that is not a function fails where it is written, not at every call', () => {
    for (const handler of [null, 42, { handler: () => 1 }]) {
      expect(thrownCode(() => defineWorker(handler as unknown as () => number))).toBe(
        'OMNI_ERR_INVALID_ARGUMENT',
      );
    }
  });
});

describe('results that look postable but are not', () => {
  const POST_CHECKS = builtModuleUrl('test/fixtures/post-checks-worker.js');

  it('a detached ArrayBuffer result rejects its call and the thread serves on (its close hook still runs)', async () => {
    const counts = new SharedArrayBuffer(8);
    const rt = await start({ worker: POST_CHECKS, workerData: { counts }, threads: 1 });
    const before = await rt.run<number>({ mode: 'thread' });
    // deadlineMs only bounds a hang (30 s: a call not started within a shorter one was skipped).
    expect(await codeOf(rt.run({ mode: 'detached' }, { deadlineMs: 30_000 }))).toBe('OMNI_ERR_TASK_FAILED');
    expect(await rt.run<number>({ mode: 'thread' })).toBe(before); // the same thread answers
    await expect(rt.close()).resolves.toEqual({ clean: true, abandoned: 0 });
    const [inits, closes] = Array.from(new Int32Array(counts));
    expect(inits).toBeGreaterThan(0);
    expect(closes).toBe(inits);
  });

  // Its own byteLength is the handler's: the check that lets a result skip the clone reads a
  // buffer's and a view's length by their internal slots, or a detached one that says it has
  // bytes would reach piscina's post, which threw there and ended the thread.
  it.each([
    ['an ArrayBuffer', 'detached-claims-bytes'],
    ['a view', 'detached-view-claims-bytes'],
  ])(
    'a detached %s result whose own byteLength says 8 rejects its call; the thread serves on',
    async (_what, mode) => {
      const rt = await start({ worker: POST_CHECKS, threads: 1 });
      const before = await rt.run<number>({ mode: 'thread' });
      // deadlineMs only bounds a hang (30 s: a call not started within a shorter one was skipped).
      expect(await codeOf(rt.run({ mode }, { deadlineMs: 30_000 }))).toBe('OMNI_ERR_TASK_FAILED');
      expect(await rt.run<number>({ mode: 'thread' })).toBe(before); // the same thread answers
      expect(rt.report()).toMatchObject({ failed: 1, running: 0 });
    },
  );

  it("piscina's move() of a view over shared memory rejects its call, even where the worker owns uncaught errors", async () => {
    const rt = await start({ worker: POST_CHECKS, workerData: { ownUncaught: true }, threads: 1 });
    // deadlineMs only bounds a hang: the call settles at once when the result is checked. Not
    // 1.5 s (nor a 1 s startTimeoutMs): a loaded machine that took that long to start the thread,
    // or the call, failed the test (a call whose deadline passed before it started is skipped).
    expect(await codeOf(rt.run({ mode: 'sab-move' }, { deadlineMs: 30_000 }))).toBe('OMNI_ERR_TASK_FAILED');
    expect(rt.report()).toMatchObject({ running: 0 });
  });

  it('a Transferable result whose own list names one buffer twice is moved, even where the worker owns uncaught errors', async () => {
    // Posted unchecked, piscina's postMessage threw "duplicate ArrayBuffer" outside the task: the
    // call was never answered (the deadline below only bounds that hang).
    const rt = await start({ worker: POST_CHECKS, workerData: { ownUncaught: true }, threads: 1 });
    const view = await rt.run<Uint8Array>({ mode: 'transferable-dup' }, { deadlineMs: 30_000 });
    expect(view.byteLength).toBe(8);
    await expect(rt.run({ mode: 'thread' })).resolves.toBeTypeOf('number');
  });

  it.each([
    ['an Error', 'name-getter'],
    ['a value clone refuses', 'name-getter-unclonable'],
  ])('an error whose name getter throws %s keeps its code, and the thread serves on', async (_what, mode) => {
    const rt = await start({ worker: POST_CHECKS, workerData: { ownUncaught: true }, threads: 1 });
    expect(await codeOf(rt.run({ mode }, { deadlineMs: 30_000 }))).toBe('X_GET_NAME');
    await expect(rt.run({ mode: 'thread' })).resolves.toBeTypeOf('number');
  });

  it('fatal: true reaches the caller whatever the code, an omni-runtime one included', async () => {
    const rt = await start({ worker: POST_CHECKS, threads: 1 });
    const err = (await rejection(rt.run({ mode: 'fatal-known' }))) as Error & {
      code?: string;
      fatal?: unknown;
    };
    expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(err.fatal).toBe(true);
    expect(rt.report().state).toBe('failed');
  });

  it('an input that cannot be posted (a revoked Proxy) is OMNI_ERR_INVALID_ARGUMENT, capacity back', async () => {
    const rt = await start({ worker: POST_CHECKS, threads: 1, admission: { requests: 2 } });
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(await codeOf(rt.run(proxy))).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(rt.report()).toMatchObject({ depth: 0 });
  });
});
