/**
 * Every public entry point reads each field of a caller's object at most once. A getter or
 * Proxy may answer differently on a second read, and a value read again after its check is a
 * value nobody checked (a startTimeoutMs answering 1000 and then undefined was taken for no
 * limit). Each test hands the entry point counting objects (fixtures/read-counter.ts) with every
 * option it takes set, and asserts that no path was read twice. Not here, having no caller
 * object to read: tryAdmit (a cost), attach (a SharedArrayBuffer, read by its slots), the
 * NativeContext calls (typed arrays and numbers), seededWeights and statusFor.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  BoundedAdmission,
  defineWorker,
  fromWire,
  hasCode,
  LinearRuntime,
  loadNativeLibrary,
  NativeContext,
  type NativeLibrary,
  RejectedError,
  Runtime,
  resolveDevice,
  selectBackend,
  toWire,
  type WireError,
} from '../src/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { answerFor, ServeMetrics, serve } from '../src/serve/index.js';
import { everyLinearOption, everyRuntimeOption, everyServeOption } from './fixtures/every-option.js';
import { counted, countedGetters, type Reads, readTwice } from './fixtures/read-counter.js';

const ECHO = builtModuleUrl('test/fixtures/echo-worker.js');
const FIXTURE_LIBRARY = loadNativeLibrary('fixture').path;

const closers: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** A library as a caller could pass one: not frozen, so that its nested `raw` is counted too. */
function unfrozen(library: NativeLibrary): NativeLibrary {
  return { ...library, raw: { ...library.raw } };
}

function threadEnds(): { exited(id: number): void; stopped(): void } {
  return { exited() {}, stopped() {} };
}

describe('admission entry points read each field once', () => {
  it('new BoundedAdmission(bounds)', () => {
    const reads: Reads = new Map();
    new BoundedAdmission(counted({ requests: 4, units: 100 }, reads));
    expect(reads.get('requests')).toBe(1);
    expect(readTwice(reads)).toEqual([]);
  });

  it('admit(cost, options), admitted at once and queued', async () => {
    const admission = new BoundedAdmission({ requests: 1 });
    const readsAtOnce: Reads = new Map();
    const options = { signal: new AbortController().signal, timeoutMs: 10_000 };
    const first = await admission.admit(1, counted({ ...options }, readsAtOnce));
    const readsQueued: Reads = new Map();
    const controller = new AbortController();
    const queued = admission.admit(1, counted({ signal: controller.signal, timeoutMs: 10_000 }, readsQueued));
    controller.abort();
    await expect(queued).rejects.toMatchObject({ code: 'OMNI_ERR_ABORTED' });
    first.release();
    expect(readsAtOnce.get('timeoutMs')).toBe(1);
    expect(readTwice(readsAtOnce)).toEqual([]);
    expect(readTwice(readsQueued)).toEqual([]);
  });

  it('releaseClaim and reclaim (claims)', () => {
    const admission = new BoundedAdmission({ requests: 2, units: 10 });
    const a = admission.tryAdmit(3);
    const b = admission.tryAdmit(4);
    if (!a.ok || !b.ok) throw new Error('not admitted');
    const readsA: Reads = new Map();
    admission.releaseClaim(counted({ ...a.toClaim() }, readsA));
    const readsB: Reads = new Map();
    expect(admission.reclaim(counted({ ...b.toClaim() }, readsB))).toBe(true);
    expect(readsA.get('slot')).toBe(1);
    expect(readTwice(readsA)).toEqual([]);
    expect(readTwice(readsB)).toEqual([]);
    expect(admission.report().depth).toBe(0);
  });
});

describe('Runtime entry points read each field once', () => {
  it('Runtime.start (admission, resourceLimits, threadEnds, workerData), run and close', async () => {
    const reads: Reads = new Map();
    const dataReads: Reads = new Map();
    const runtime = await Runtime.start(
      counted(
        {
          ...everyRuntimeOption(ECHO, threadEnds(), { threads: 2 }), // two: workerData must not be read once per thread
          workerData: countedGetters({ name: 'data', nested: { n: 1 } }, dataReads),
        },
        reads,
      ),
    );
    closers.push(() => runtime.close({ timeoutMs: 10_000 }));
    expect(reads.get('admission.requests')).toBe(1);
    expect(readTwice(reads)).toEqual([]);
    // Cloned once at start (Runtime.start keeps the clone), not by each thread started.
    expect(readTwice(dataReads)).toEqual([]);
    expect(dataReads.get('nested.n')).toBe(1);

    const runReads: Reads = new Map();
    const inputReads: Reads = new Map();
    const buffer = new ArrayBuffer(8);
    const input = countedGetters({ value: 7, buffer }, inputReads);
    const result = await runtime.run(
      input,
      counted(
        { cost: 2, signal: new AbortController().signal, deadlineMs: 60_000, transfer: [buffer] },
        runReads,
      ),
    );
    expect(result).toMatchObject({ value: 7 });
    expect(runReads.get('transfer.0')).toBe(1);
    expect(readTwice(runReads, ['transfer.length'])).toEqual([]); // copying an array reads length per element
    expect(readTwice(inputReads)).toEqual([]);

    const closeReads: Reads = new Map();
    closers.length = 0;
    await runtime.close(counted({ timeoutMs: 10_000 }, closeReads));
    expect(readTwice(closeReads)).toEqual([]);
  });
});

describe('queued calls read their caller objects once', () => {
  it('Runtime.run waiting for admission, and queued for a thread', async () => {
    const runtime = await Runtime.start({ worker: ECHO, threads: 1, admission: { requests: 2, wait: true } });
    closers.push(() => runtime.close({ timeoutMs: 10_000 }));
    const calls = Array.from({ length: 4 }, (_, i) => {
      const reads: Reads = new Map();
      const inputReads: Reads = new Map();
      const buffer = new ArrayBuffer(8);
      const options = { signal: new AbortController().signal, deadlineMs: 60_000, transfer: [buffer] };
      const done = runtime.run(countedGetters({ i, buffer }, inputReads), counted(options, reads));
      return { reads, inputReads, done };
    });
    // With one thread and two requests, the last two waited for admission, the second for a thread.
    for (const [i, call] of calls.entries()) {
      expect(await call.done).toMatchObject({ i });
      // Copying an array reads its length once per element: one snapshot all the same.
      expect(readTwice(call.reads, ['transfer.length']), `call ${i}`).toEqual([]);
      expect(readTwice(call.inputReads), `call ${i}`).toEqual([]);
      expect(call.inputReads.get('i')).toBe(1);
    }
  });
});

describe('native entry points read each field once', () => {
  it('loadNativeLibrary(backend, options)', () => {
    const reads: Reads = new Map();
    loadNativeLibrary('fixture', counted({ path: FIXTURE_LIBRARY }, reads));
    expect(readTwice(reads)).toEqual([]);
  });

  it.each([
    ['fixture', 'requested'],
    [undefined, 'from OMNI_BACKEND'],
    ['auto', 'falling back from a CUDA library that is not there'],
  ] as const)('selectBackend(%s, env, options): %s', (preference, _how) => {
    const envReads: Reads = new Map();
    const reads: Reads = new Map();
    const choice = selectBackend(
      preference,
      counted({ OMNI_BACKEND: 'fixture', OMNI_CUDA_DEVICE: '0' }, envReads),
      counted({ fixturePath: FIXTURE_LIBRARY, cudaPath: '/nonexistent/libomni_cuda.so' }, reads),
    );
    expect(choice.backend).toBe('fixture');
    expect(reads.get('fixturePath')).toBe(1);
    expect(readTwice(envReads)).toEqual([]);
    expect(readTwice(reads)).toEqual([]);
  });

  it('resolveDevice(option, env)', () => {
    const envReads: Reads = new Map();
    expect(resolveDevice(undefined, counted({ OMNI_CUDA_DEVICE: '1' }, envReads))).toBe(1);
    expect(envReads.get('OMNI_CUDA_DEVICE')).toBe(1);
    expect(readTwice(envReads)).toEqual([]);
  });

  it('NativeContext.open(library, options), its env included', () => {
    for (const device of [0, undefined]) {
      const reads: Reads = new Map();
      const libraryReads: Reads = new Map();
      const context = NativeContext.open(
        counted(unfrozen(loadNativeLibrary('fixture')), libraryReads),
        counted(
          { device, workspaceCount: 2, workspaceBytes: 1 << 20, env: { OMNI_CUDA_DEVICE: '0' } },
          reads,
        ),
      );
      expect(readTwice(libraryReads)).toEqual([]);
      context.close();
      expect(readTwice(reads)).toEqual([]);
    }
  });
});

describe('LinearRuntime entry points read each field once', () => {
  it('LinearRuntime.start (admission, resourceLimits, libraries, weights) and run', async () => {
    const reads: Reads = new Map();
    const lr = await LinearRuntime.start(counted(everyLinearOption(FIXTURE_LIBRARY), reads));
    closers.push(() => lr.close({ timeoutMs: 10_000 }));
    expect(readTwice(reads)).toEqual([]);
    expect(reads.get('admission.requests')).toBe(1);
    expect(reads.get('weights.w')).toBe(1);

    const runReads: Reads = new Map();
    const x = new Float32Array(8);
    const y = await lr.run(
      x,
      counted(
        {
          rows: 2,
          cost: 2,
          signal: new AbortController().signal,
          deadlineMs: 60_000,
          transfer: [x.buffer as ArrayBuffer],
        },
        runReads,
      ),
    );
    expect(y).toHaveLength(4);
    expect(runReads.get('rows')).toBe(1);
    expect(readTwice(runReads, ['transfer.length'])).toEqual([]); // copying an array reads length per element
  });
});

describe('the rest read each field once', () => {
  it('defineWorker(handler, options)', () => {
    const reads: Reads = new Map();
    defineWorker(() => 1, counted({ init() {}, close() {} }, reads));
    expect(reads.get('init')).toBe(1);
    expect(readTwice(reads)).toEqual([]);
  });

  it('fromWire(wire), for each kind of code', () => {
    const wires: WireError[] = [
      { name: 'NativeError', message: 'm', code: 'OMNI_ERR_NATIVE', nativeCode: 3, fatal: true },
      {
        name: 'TooLargeError',
        message: 'm',
        code: 'OMNI_ERR_TOO_LARGE',
        fields: { cost: 9, unitCapacity: 4 },
      },
      {
        name: 'RejectedError',
        message: 'm',
        code: 'OMNI_ERR_REJECTED',
        fatal: false,
        fields: { reason: 'full', depth: 1, capacity: 1, rejected: 2 },
      },
      { name: 'Custom', message: 'm', code: 'USER_CODE', nativeCode: 1, fatal: false, fields: { extra: 1 } },
      { name: 'TypeError', message: 'm', fields: { extra: 1 } },
    ];
    for (const wire of wires) {
      const reads: Reads = new Map();
      fromWire(counted(wire, reads));
      expect(readTwice(reads), wire.name).toEqual([]);
      expect(reads.get('code'), wire.name).toBe(1);
    }
  });

  it('toWire(error)', () => {
    const reads: Reads = new Map();
    toWire(counted({ name: 'Error', message: 'm', code: 'USER_CODE', detail: 'd' }, reads));
    expect(readTwice(reads)).toEqual([]);
  });

  it('new RejectedError(reason, snapshot)', () => {
    const reads: Reads = new Map();
    const error = new RejectedError('requests', counted({ depth: 1, capacity: 2, rejected: 3 }, reads));
    expect(error.depth).toBe(1);
    expect(readTwice(reads)).toEqual([]);
  });

  it('answerFor(error) and hasCode(error, code)', () => {
    for (const error of [
      new RejectedError('requests', { depth: 1, capacity: 1, rejected: 1 }),
      Object.assign(new Error('m'), { code: 'OMNI_ERR_NATIVE', nativeCode: 3, detail: 'd' }),
      Object.assign(new Error('m'), { code: 'OMNI_ERR_UNAVAILABLE', state: 'draining' }),
    ]) {
      const reads: Reads = new Map();
      answerFor(counted(error, reads));
      expect(readTwice(reads), error.message).toEqual([]);
      const codeReads: Reads = new Map();
      hasCode(counted(error, codeReads), 'OMNI_ERR_NATIVE');
      expect(readTwice(codeReads)).toEqual([]);
    }
  });

  it('new ServeMetrics(source), across scrapes', async () => {
    const runtime = await Runtime.start({ worker: ECHO, threads: 1 });
    closers.push(() => runtime.close({ timeoutMs: 10_000 }));
    const reads: Reads = new Map();
    const metrics = new ServeMetrics(
      counted({ report: () => runtime.report(), inflight: () => 0, connections: () => 1 }, reads),
    );
    await metrics.scrape();
    await metrics.scrape();
    // The functions checked at construction are the ones every scrape calls.
    expect(reads.get('report')).toBe(1);
    expect(readTwice(reads)).toEqual([]);
  });

  it('serve(runtime, options) and drain(options)', async () => {
    const lr = await LinearRuntime.start({ backend: 'fixture', inFeatures: 4, outFeatures: 2, threads: 1 });
    closers.push(() => lr.close({ timeoutMs: 10_000 }));
    const reads: Reads = new Map();
    // The runtime is a live object whose methods each request calls: counted up to the start.
    const runtimeReads: Reads = new Map();
    const handle = await serve(counted(lr, runtimeReads), counted(everyServeOption(true), reads));
    expect(readTwice(reads)).toEqual([]);
    expect(runtimeReads.get('inFeatures')).toBe(1);
    expect(readTwice(runtimeReads)).toEqual([]);
    const drainReads: Reads = new Map();
    closers.length = 0;
    await handle.drain(counted({ timeoutMs: 10_000 }, drainReads));
    expect(readTwice(drainReads)).toEqual([]);
  });
});
