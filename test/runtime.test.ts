/**
 * Runtime lifecycle: start() proves every thread loaded its worker (or rejects with the
 * worker's own error), invalid options fail where they are written, and close() drains
 * in-flight work before stopping, or, with timeoutMs, terminates stuck work and still
 * returns its capacity. The other concepts: runtime-{cancel,admission,failures,transfer}.
 */
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, type ResourceLimits } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { defineWorker, Runtime, type RuntimeOptions } from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { MAX_RESOURCE_LIMIT_MB, MIN_STACK_SIZE_MB } from '../src/runtime/options.js';
import { INVOKED, newControl, open, STARTED, waitFor } from './fixtures/runtime-control.js';
import {
  cleanupOnRealClock,
  closePastRepliesWait,
  codeOf,
  control,
  GATED_WORKER,
  gate,
  rejection,
  start,
  turns,
} from './fixtures/runtime-harness.js';

afterEach(cleanupOnRealClock);

const INIT_WORKER = builtModuleUrl('test/fixtures/runtime-init-worker.js');
const TORN_RELEASE_WORKER = builtModuleUrl('test/fixtures/torn-release-worker.js');

/**
 * Two threads whose close hooks never return. startTimeoutMs also bounds those hooks: 600,000 puts
 * that bound out of reach, so only a close timeout can end them.
 */
async function withHangingCloseHooks(startTimeoutMs: number) {
  const closed = newControl();
  const rt = await Runtime.start({
    worker: INIT_WORKER,
    threads: 2,
    startTimeoutMs,
    workerData: { closed: closed.buffer, closeHangs: true },
  });
  return { closed, rt };
}

describe('Runtime.start', () => {
  it("takes piscina's idleTimeout as piscina does, Infinity included (it has no effect here)", async () => {
    // Refused before as not an integer up to 2^31-1, though piscina takes Infinity (the pool's own
    // default here): the README says the option is accepted.
    for (const idleTimeout of [0, 1_000, Number.POSITIVE_INFINITY]) {
      const rt = await start({ threads: 1, idleTimeout });
      await expect(rt.run({ mode: 'echo', value: idleTimeout })).resolves.toBe(idleTimeout);
    }
  });

  it('runs init once per thread with workerData, then serves', async () => {
    const c = newControl();
    const rt = await start({
      worker: INIT_WORKER,
      threads: 2,
      workerData: { control: c.buffer, tag: 'from-init' },
    });
    expect(rt.state).toBe('ready');
    expect(Atomics.load(c, INVOKED)).toBe(2);
    await expect(rt.run(null)).resolves.toBe('from-init');
    expect(rt.report()).toMatchObject({ state: 'ready', depth: 0, capacity: null, completed: 1 });
  });

  it('a replacement thread gets the workerData given at start, though the caller changed it since', async () => {
    const blob = new ArrayBuffer(8);
    const workerData = { tag: 'at start', blob };
    const rt = await start({ worker: INIT_WORKER, threads: 1, workerData });
    workerData.tag = 'changed';
    structuredClone(blob, { transfer: [blob] }); // handed elsewhere: detached
    expect(await codeOf(rt.run({ exit: true }))).toBe('OMNI_ERR_WORKER_EXITED');
    await expect(rt.run(null)).resolves.toBe('at start');
  });

  it('a workerData structured clone refuses: OMNI_ERR_INVALID_ARGUMENT before any thread starts', async () => {
    const c = newControl();
    const workerData = { control: c.buffer, hook: () => {} };
    expect(await codeOf(Runtime.start({ worker: INIT_WORKER, workerData }))).toBe(
      'OMNI_ERR_INVALID_ARGUMENT',
    );
    expect(Atomics.load(c, INVOKED)).toBe(0);
  });

  // A port or a stream must be transferred, not cloned: structured clone refuses it with a
  // TypeError (ERR_MISSING_TRANSFERABLE_IN_TRANSFER_LIST), not a DataCloneError.
  it('a workerData holding a MessagePort: OMNI_ERR_INVALID_ARGUMENT before any thread starts', async () => {
    const c = newControl();
    const { port1, port2 } = new MessageChannel();
    try {
      const workerData = { control: c.buffer, port: port1 };
      expect(await codeOf(Runtime.start({ worker: INIT_WORKER, workerData }))).toBe(
        'OMNI_ERR_INVALID_ARGUMENT',
      );
      expect(Atomics.load(c, INVOKED)).toBe(0);
    } finally {
      port1.close();
      port2.close();
    }
  });

  it('accepts a file: URL object and a plain path for the worker', async () => {
    const url = new URL(GATED_WORKER);
    const a = await start({ worker: url });
    await expect(a.run({ mode: 'echo', value: 'url' })).resolves.toBe('url');
    const b = await start({ worker: url.pathname });
    await expect(b.run({ mode: 'echo', value: 'path' })).resolves.toBe('path');
  });

  it("rejects with the code of an error thrown by the worker's init", async () => {
    for (const threads of [1, 2]) {
      const err = await rejection(
        Runtime.start({ worker: INIT_WORKER, threads, workerData: { fail: 'coded', code: 'X_NO_DEVICE' } }),
      );
      expect(err).toMatchObject({ code: 'X_NO_DEVICE', message: 'init failed' });
    }
  });

  it('rejects OMNI_ERR_TASK_FAILED (message kept) when init throws an error without a code', async () => {
    const err = await rejection(Runtime.start({ worker: INIT_WORKER, workerData: { fail: 'plain' } }));
    expect(err).toMatchObject({ code: 'OMNI_ERR_TASK_FAILED', message: 'init failed without a code' });
  });

  /** Starts three init-worker threads that fail as `how` says; the start's error and the counters. */
  async function failedStart(how: Record<string, unknown>) {
    const control = newControl();
    const closed = newControl();
    const err = await rejection(
      Runtime.start({
        worker: INIT_WORKER,
        threads: 3,
        workerData: { control: control.buffer, closed: closed.buffer, ...how },
      }),
    );
    return { err, control, closed };
  }

  it('runs the close hook of every thread whose init succeeded when another thread fails start', async () => {
    const { err, control, closed } = await failedStart({ failAt: 2, code: 'X_NO_DEVICE' });
    expect(err.code).toBe('X_NO_DEVICE');
    expect(Atomics.load(control, INVOKED)).toBe(3);
    // Every thread answered, so the two whose init succeeded ran their close hook; the one whose
    // init threw did not (its init must clean up after itself).
    expect(Atomics.load(closed, INVOKED)).toBe(2);
  });

  it('a thread that exits during init: start rejects, and the threads whose init succeeded close', async () => {
    const { err, control, closed } = await failedStart({ exitAt: 3 });
    expect(err.code).toBe('OMNI_ERR_WORKER_EXITED');
    expect(Atomics.load(control, STARTED)).toBe(2);
    // Not every thread could answer, so there was no teardown round: the two waiting at the
    // start's barrier ran their close hooks there, before the pool was destroyed.
    expect(Atomics.load(closed, INVOKED)).toBe(2);
  });

  it('close() still stops the threads when a close hook never returns (after startTimeoutMs)', async () => {
    // startTimeoutMs bounds the close hooks on a fake clock, made due once both hooks run: a real
    // 2 s one bounded start() too, which a loaded machine did not fit in.
    const { closed, rt } = await withHangingCloseHooks(600_000);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let closing: Promise<unknown>;
    try {
      closing = rt.close();
      await waitFor(closed, INVOKED, 2, closing); // both hooks ran, and neither returns
      vi.advanceTimersByTime(600_000);
    } finally {
      vi.useRealTimers();
    }
    await closing;
    expect(Atomics.load(closed, INVOKED)).toBe(2);
    expect(rt.report().state).toBe('stopped');
  });

  it('a close timeout given before the drain ended bounds the drain, not the close hooks that follow it', async () => {
    const closed = newControl();
    const rt = await Runtime.start({
      worker: INIT_WORKER,
      threads: 2,
      workerData: { closed: closed.buffer, closeGate: true },
    });
    // Nothing in flight: the drain ends at once, and the hooks run past the 0 ms timeout.
    const closing = rt.close({ timeoutMs: 0 });
    await waitFor(closed, INVOKED, 2, closing); // both hooks are running, each held at its gate
    // Set after close()'s own 0 ms timer, so due after it: that timeout has fired by now.
    await new Promise((resolve) => setTimeout(resolve, 0));
    open(closed); // the hooks finish: each frees what its init took
    await expect(closing).resolves.toEqual({ clean: true, abandoned: 0 });
    expect(Atomics.load(closed, STARTED)).toBe(2); // both hooks returned
  });

  it('a close timeout, given while the close hooks run, cuts a hook that never returns short', async () => {
    const { closed, rt } = await withHangingCloseHooks(600_000);
    const closing = rt.close();
    await waitFor(closed, INVOKED, 2, closing); // both hooks are running, and neither will return
    // What serve's second signal does: the drain is over, the teardown is what it cuts short.
    await expect(rt.close({ timeoutMs: 0 })).resolves.toEqual({ clean: true, abandoned: 0 });
    await expect(closing).resolves.toEqual({ clean: true, abandoned: 0 });
    expect(rt.report().state).toBe('stopped');
  }, 20_000);

  it('so does one given after an earlier close timeout that only bounded the drain', async () => {
    const { closed, rt } = await withHangingCloseHooks(600_000);
    // Nothing in flight: the drain ends at once; its 0 ms timeout does not reach the hooks.
    const closing = rt.close({ timeoutMs: 0 });
    await waitFor(closed, INVOKED, 2, closing); // both hooks are running, and neither will return
    // Due no sooner than the first one was: it still applies, as the first no longer does.
    await expect(rt.close({ timeoutMs: 0 })).resolves.toEqual({ clean: true, abandoned: 0 });
    await expect(closing).resolves.toEqual({ clean: true, abandoned: 0 });
    expect(rt.report().state).toBe('stopped');
  }, 20_000);

  it('defineWorker without a handler function throws OMNI_ERR_INVALID_ARGUMENT', () => {
    for (const handler of [42, undefined, 'run']) {
      expect(() => defineWorker(handler as never)).toThrow(
        expect.objectContaining({ code: 'OMNI_ERR_INVALID_ARGUMENT' }),
      );
    }
  });

  it('rejects a module whose default export is not defineWorker(...)', async () => {
    const err = await rejection(
      Runtime.start({ worker: builtModuleUrl('test/fixtures/runtime-undefined-worker.js') }),
    );
    expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  it("rejects a module that does not exist with the loader's own code", async () => {
    const err = await rejection(
      Runtime.start({ worker: builtModuleUrl('test/fixtures/runtime-missing-worker.js') }),
    );
    expect(err.code).toBe('ERR_MODULE_NOT_FOUND');
  });

  it("loads a worker from a module path whose first folder is named 'data' or 'FILE'", async () => {
    // Only a scheme's colon makes a URL: without it, such a name is a folder like any other.
    const path = relative(process.cwd(), fileURLToPath(GATED_WORKER));
    for (const worker of [`data/../${path}`, `FILE/../${path}`]) {
      expect((await start({ worker })).report().state).toBe('ready');
    }
  });

  it('loads a worker from a data: URL, given as a URL or as a string, its scheme in any case', async () => {
    const source = `import { defineWorker } from ${JSON.stringify(builtModuleUrl('src/index.js'))};
      export default defineWorker((n) => n * 2);`;
    const href = `data:text/javascript,${encodeURIComponent(source)}`;
    // Spelled 'DATA:' (schemes are case-insensitive), it was taken as a path: ERR_MODULE_NOT_FOUND.
    for (const worker of [new URL(href), href, `DATA${href.slice(4)}`, `Data${href.slice(4)}`]) {
      const rt = await start({ worker });
      expect(await rt.run(21)).toBe(42);
    }
  });

  it('loads the module a worker URL holds, whatever its own href says', async () => {
    // Read through its own href, this URL was taken for an https: module and refused
    // OMNI_ERR_INVALID_ARGUMENT (or, with an own href naming another file:, that file was loaded).
    const source = `import { defineWorker } from ${JSON.stringify(builtModuleUrl('src/index.js'))};
      export default defineWorker((n) => n * 2);`;
    const worker = Object.defineProperty(
      new URL(`data:text/javascript,${encodeURIComponent(source)}`),
      'href',
      { value: 'https://127.0.0.1:1/worker.js' },
    );
    const rt = await start({ worker });
    expect(await rt.run(21)).toBe(42);
  });

  it('gives the threads the resourceLimits it checked, each read once, inherited ones too', async () => {
    const source = `import { resourceLimits } from 'node:worker_threads';
      import { defineWorker } from ${JSON.stringify(builtModuleUrl('src/index.js'))};
      export default defineWorker(() => resourceLimits);`;
    const worker = `data:text/javascript,${encodeURIComponent(source)}`;
    // Read again by Node as each thread starts, this answered 'a lot', which Node ignores: the
    // thread ran without the limit that was checked.
    let reads = 0;
    class Limits {
      get maxOldGenerationSizeMb(): unknown {
        return reads++ === 0 ? 48 : 'a lot';
      }
    }
    const rt = await start({ worker, resourceLimits: new Limits() as ResourceLimits });
    expect(await rt.run(null)).toMatchObject({ maxOldGenerationSizeMb: 48 });
    expect(reads).toBe(1);
  });

  it('starts threads at the least stack it takes, and each limit at its ceiling but the stack', async () => {
    const source = `import { resourceLimits } from 'node:worker_threads';
      import { defineWorker } from ${JSON.stringify(builtModuleUrl('src/index.js'))};
      export default defineWorker(() => resourceLimits);`;
    const worker = `data:text/javascript,${encodeURIComponent(source)}`;
    const limits = {
      stackSizeMb: MIN_STACK_SIZE_MB,
      maxOldGenerationSizeMb: MAX_RESOURCE_LIMIT_MB,
      maxYoungGenerationSizeMb: MAX_RESOURCE_LIMIT_MB,
    };
    const rt = await start({ worker, resourceLimits: limits });
    expect(await rt.run(null)).toMatchObject(limits);
  });

  it('rejects invalid options with OMNI_ERR_INVALID_ARGUMENT / OMNI_ERR_INVALID_BOUND', async () => {
    const worker = GATED_WORKER;
    const invalidArgument: unknown[] = [
      null,
      {},
      { worker: '' },
      { worker: 42 },
      // Node's loader refuses these only inside the threads; a string would be read as a path.
      { worker: new URL('http://127.0.0.1:1/worker.js') },
      { worker: 'https://127.0.0.1:1/worker.js' },
      { worker: 'HTTPS://127.0.0.1:1/worker.js' },
      { worker: 'node://worker.js' },
      // A file: URL in any case that does not parse (a host with a blank): no uncoded TypeError.
      { worker: 'FILE://a b/worker.js' },
      { worker: 'file://a b/worker.js' }, // failed ERR_INVALID_URL in the threads
      // Read by internal slot: an own protocol cannot pass an http: URL, and an object only
      // inheriting URL.prototype (its getters throw) is no URL.
      {
        worker: Object.defineProperty(new URL('http://127.0.0.1:1/worker.js'), 'protocol', {
          value: 'file:',
        }),
      },
      { worker: Object.create(URL.prototype) },
      { worker, threads: 0 },
      { worker, threads: 1.5 },
      { worker, threads: 257 },
      { worker, admission: null },
      { worker, admission: 'x' },
      { worker, admission: { requests: 1, wait: 'yes' } },
      { worker, deadlineMs: 0 },
      { worker, deadlineMs: Number.NaN },
      { worker, idleTimeout: -1 },
      { worker, startTimeoutMs: 0 },
      // Node ignores these without a word: the thread would run without the limit.
      { worker, resourceLimits: 'abc' },
      { worker, resourceLimits: null },
      { worker, resourceLimits: { maxOldSpaceSizeMb: 64 } },
      { worker, resourceLimits: { maxOldGenerationSizeMb: '64' } },
      { worker, resourceLimits: { stackSizeMb: 0 } },
      // Node killed the whole process for these, not the thread: a stack too small for its
      // bootstrap, one whose size overflowed, a code range the address space cannot hold (MB
      // given as bytes); Infinity ran past the ceiling too.
      { worker, resourceLimits: { stackSizeMb: 0.1 } },
      { worker, resourceLimits: { stackSizeMb: 2 ** 53 } },
      { worker, resourceLimits: { codeRangeSizeMb: 128 * 2 ** 20 } },
      // Node 22 and later abort the process making a heap this small; Node 20 ended the thread.
      { worker, resourceLimits: { maxOldGenerationSizeMb: 2 } },
      { worker, resourceLimits: { maxOldGenerationSizeMb: Number.POSITIVE_INFINITY } },
      { worker, resourceLimits: { maxYoungGenerationSizeMb: MAX_RESOURCE_LIMIT_MB + 1 } },
      // Structured clone cannot post a function to the threads.
      { worker, workerData: { f: () => 1 } },
    ];
    for (const options of invalidArgument) {
      expect([options, await codeOf(Runtime.start(options as RuntimeOptions))]).toEqual([
        options,
        'OMNI_ERR_INVALID_ARGUMENT',
      ]);
    }
    const invalidBound: unknown[] = [
      { worker, admission: { requests: 0 } },
      { worker, admission: { requests: 1.5 } },
      { worker, admission: { requests: 2 ** 16 + 1 } },
      { worker, admission: { requests: 2, units: 0 } },
      { worker, admission: { requests: 2, units: -4 } },
      // Every option is checked before the workerData is cloned (the costly step), as before
      // it was cloned at start: a bound mistake beside an uncloneable one is still a bound's.
      { worker, admission: { requests: 0 }, workerData: { f: () => 1 } },
    ];
    for (const options of invalidBound) {
      expect([options, await codeOf(Runtime.start(options as RuntimeOptions))]).toEqual([
        options,
        'OMNI_ERR_INVALID_BOUND',
      ]);
    }
  });
});

describe('Runtime.close', () => {
  for (const admission of [undefined, { requests: 4 }]) {
    it(`drains in-flight and queued work, then stops (${admission ? 'bounded' : 'serial'})`, async () => {
      const rt = await start({ threads: 1, ...(admission ? { admission } : {}) });
      const a = control();
      const events: string[] = [];
      const running = rt.run(gate(a, { value: 'a' })).then((v) => events.push(`done ${v}`));
      await waitFor(a, STARTED, 1, running);
      const queued = rt.run({ mode: 'echo', value: 'b' }).then((v) => events.push(`done ${v}`));
      expect(rt.report().depth).toBe(2);

      const closing = rt.close().then(() => events.push('closed'));
      expect(rt.state).toBe('draining');
      const refused = await rejection(rt.run({ mode: 'echo' }));
      expect(refused).toMatchObject({ code: 'OMNI_ERR_UNAVAILABLE', state: 'draining' });
      await turns();
      expect(events).toEqual([]); // the gate holds the work, so nothing may have finished

      open(a);
      await Promise.all([running, queued, closing]);
      expect(events).toEqual(['done a', 'done b', 'closed']);
      expect(rt.state).toBe('stopped');
      expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, completed: 2, failed: 0 });
      expect(await codeOf(rt.run({ mode: 'echo' }))).toBe('OMNI_ERR_UNAVAILABLE');
      expect(rt.report().refused).toBe(0);
    });
  }

  for (const admission of [undefined, { requests: 32, wait: true }]) {
    it(`runs every call admitted before close() in the same tick (${admission ? 'wait mode' : 'serial'})`, async () => {
      // Both modes admit through admit(), whose permit reaches dispatch a microtask later,
      // after close() has already moved the state to 'draining'.
      const rt = await start({ threads: 2, ...(admission ? { admission } : {}) });
      const calls = Array.from({ length: 20 }, (_, i) => rt.run({ mode: 'echo', value: i }));
      const closing = rt.close();
      await expect(Promise.all(calls)).resolves.toEqual(Array.from({ length: 20 }, (_, i) => i));
      await closing;
      expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, completed: 20, failed: 0 });
    });
  }

  it('wakes callers waiting for admission with OMNI_ERR_UNAVAILABLE', async () => {
    const rt = await start({ threads: 1, admission: { requests: 1, wait: true } });
    const a = control();
    const never = control();
    const running = rt.run(gate(a, { value: 'a' }));
    await waitFor(a, STARTED, 1, running);
    const waiting = rt.run({ mode: 'echo', control: never.buffer as SharedArrayBuffer });
    const closing = rt.close();
    expect(await codeOf(waiting)).toBe('OMNI_ERR_UNAVAILABLE');
    open(a);
    await expect(running).resolves.toBe('a');
    await closing;
    expect(Atomics.load(never, INVOKED)).toBe(0);
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, waiting: 0 });
  });

  it('returns the same promise when called twice', async () => {
    const rt = await start({ threads: 1 });
    const first = rt.close();
    expect(rt.close()).toBe(first);
    expect(await first).toEqual({ clean: true, abandoned: 0 });
    expect(rt.state).toBe('stopped');
  });

  it('a later close({ timeoutMs }) still forces a plain close() that is waiting, same promise', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const stuck = control();
    const running = rt.run(gate(stuck, { sync: true }));
    const call = codeOf(running);
    await waitFor(stuck, STARTED, 1, running);
    const first = rt.close();
    // A longer timeout never postpones a shorter one; the shortest given so far applies.
    expect(rt.close({ timeoutMs: 60_000 })).toBe(first);
    expect(rt.close({ timeoutMs: 0 })).toBe(first);
    expect(await first).toEqual({ clean: false, abandoned: 1 });
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, leaked: 0, failed: 1 });
  });

  it('with timeoutMs, terminates stuck work and still returns its capacity', async () => {
    const rt = await start({ threads: 2, admission: { requests: 4, units: 10 } });
    const stuck = control();
    const abandoned = control();
    const ac = new AbortController();
    // Two calls blocked in a synchronous (native-like) wait that nobody will open in time:
    // one with its caller still waiting, one whose caller already left.
    const waitingCall = rt.run(gate(stuck, { sync: true }), { cost: 3 });
    const leftCall = rt.run(gate(abandoned, { sync: true }), { cost: 4, signal: ac.signal });
    await Promise.all([waitFor(stuck, STARTED, 1, waitingCall), waitFor(abandoned, STARTED, 1, leftCall)]);
    ac.abort();
    expect(await codeOf(leftCall)).toBe('OMNI_ERR_ABORTED');
    expect(rt.report()).toMatchObject({ depth: 2, units: 7 });
    const waitingCode = codeOf(waitingCall);

    // Both calls are abandoned: the one whose caller left still held its capacity.
    expect(await rt.close({ timeoutMs: 20 })).toEqual({ clean: false, abandoned: 2 });
    expect(rt.state).toBe('stopped');
    expect(await waitingCode).toBe('OMNI_ERR_WORKER_EXITED');
    expect(rt.report()).toMatchObject({
      state: 'stopped',
      depth: 0,
      units: 0,
      leaked: 0,
      aborted: 1,
      failed: 1,
    });
    expect(await codeOf(rt.run({ mode: 'echo' }))).toBe('OMNI_ERR_UNAVAILABLE');
  });

  it("with timeoutMs, returns the capacity of a thread terminated inside its claim's release", async () => {
    // The release frees the slot, then gives the counts back: a termination between the two
    // left depth 1 and units 3 behind for good (nobody was left to give them back).
    // The slot freed, the call is left to a reply that never comes: close() waits startTimeoutMs
    // for it (on a fake clock here), then cuts it off, counted.
    const rt = await start({ worker: TORN_RELEASE_WORKER, threads: 1, admission: { requests: 2, units: 5 } });
    const c = control();
    const running = rt.run({ control: c.buffer }, { cost: 3 });
    const call = codeOf(running);
    await waitFor(c, STARTED, 1, running);
    expect(rt.report()).toMatchObject({ depth: 1, units: 3 });
    expect(await closePastRepliesWait(rt, 0)).toEqual({ clean: false, abandoned: 1 });
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, units: 0, leaked: 0 });
  });

  it('with timeoutMs and nothing stuck, drains normally', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const a = control();
    const running = rt.run(gate(a, { value: 'a' }));
    await waitFor(a, STARTED, 1, running);
    const closing = rt.close({ timeoutMs: 60_000 });
    open(a);
    await expect(running).resolves.toBe('a');
    expect(await closing).toEqual({ clean: true, abandoned: 0 });
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, completed: 1, failed: 0 });
  });
});

describe('Runtime.close timeouts', () => {
  it('a later, longer close timeout never postpones an earlier, shorter one', async () => {
    const rt = await start({ threads: 1, admission: { requests: 2 } });
    const stuck = control();
    const running = rt.run(gate(stuck, { sync: true }));
    const call = codeOf(running);
    await waitFor(stuck, STARTED, 1, running);
    const first = rt.close({ timeoutMs: 100 });
    expect(rt.close({ timeoutMs: 600_000 })).toBe(first);
    // Postponed, this would wait 10 minutes: the test's own timeout fails it.
    await first;
    expect(await call).toBe('OMNI_ERR_WORKER_EXITED');
    expect(rt.report()).toMatchObject({ state: 'stopped', depth: 0, failed: 1 });
  }, 20_000);
});
