/**
 * The native backend through the public API: LinearRuntime (admission + piscina + the built-in
 * native worker) on the CPU fixture. Outputs match the direct NativeContext call and the float64
 * TypeScript reference; bad input is a coded error that leaves the worker serving with nothing
 * leaked; injected native faults (fatal, copy, allocation) end the way the design says.
 *
 * Worker threads load built JavaScript (dist/, from `npm run build`, which `npm test` runs first).
 * Where a test injects a fault and needs the following call on the same thread, it uses threads: 1.
 * The row and shape limits are in test/native-runtime-limits.test.ts, the options in
 * test/native-runtime-options.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import { LinearRuntime, type LinearWeights, Runtime, seededWeights } from '../src/index.js';
import type { NativeWorkerData } from '../src/linear/protocol.js';
import type { NativeLibrary } from '../src/native/index.js';
import {
  FixtureFaults,
  loadNativeLibrary,
  MAX_ROWS,
  NativeContext,
  NativeStatus,
  seededFloats,
} from '../src/native/index.js';
import { builtModuleUrl } from '../src/paths.js';
import { closeRuntimes, start } from './fixtures/native-runtime-harness.js';
import { maxViolation as tolerance } from './fixtures/native-tolerance.js';
import { rejection } from './fixtures/runtime-harness.js';

const NATIVE_EXIT_WORKER = builtModuleUrl('test/fixtures/native-exit-worker.js');

/** The stated tolerance (test/fixtures/native-tolerance.ts) for one runtime result. */
function maxViolation(got: Float32Array, x: Float32Array, weights: LinearWeights, rows: number): number {
  return tolerance(got, x, weights.w, weights.b, rows, weights.outFeatures, weights.inFeatures);
}

/** mulberry32 integers in [lo, hi]: "random" shapes that are the same on every run. */
function seededInts(seed: number, count: number, lo: number, hi: number): number[] {
  return Array.from(seededFloats(seed, count), (f) => lo + Math.floor(((f + 1) / 2) * (hi - lo + 1)));
}

describe('native backend through the runtime (fixture)', () => {
  let lib: NativeLibrary;
  beforeAll(() => {
    buildFixture();
    lib = loadNativeLibrary('fixture');
  });
  afterEach(closeRuntimes);

  describe('outputs', () => {
    const contexts: NativeContext[] = [];
    afterAll(() => {
      for (const ctx of contexts) ctx.close();
    });

    // Three seeded shapes, in and out features 1..300, on 2 threads with 16 calls of 1..40 rows in
    // flight at once: bit-identical to the main thread's NativeContext (same library, same kernel),
    // and within the stated tolerance of the TypeScript float64 reference.
    it.each([0, 1, 2])(
      'shape %i: equal to NativeContext and within tolerance of the TS reference',
      async (i) => {
        const [inF, outF] = seededInts(500 + i, 2, 1, 300) as [number, number];
        const weights = seededWeights(inF, outF, 40 + i);
        const lr = await start({ threads: 2, weights });
        expect(lr.backend).toBe('fixture');
        const ctx = NativeContext.open(lib);
        contexts.push(ctx);
        ctx.uploadWeights(weights.w, weights.b, outF, inF);
        const rowsList = seededInts(600 + i, 16, 1, 40);
        const inputs = rowsList.map((rows, j) => seededFloats(700 + 31 * i + j, rows * inF, 2));
        // The runtime's copies go to the workers; the originals stay here for the comparisons.
        const outputs = await Promise.all(inputs.map((x) => lr.run(x.slice())));
        for (const [j, y] of outputs.entries()) {
          const rows = rowsList[j]!;
          const x = inputs[j]!;
          expect(y).toBeInstanceOf(Float32Array);
          expect(y.length).toBe(rows * outF);
          expect(y).toEqual(ctx.linearGelu(x, rows));
          expect(maxViolation(y, x, weights, rows)).toBeLessThanOrEqual(1);
        }
        expect(lr.report()).toMatchObject({ state: 'ready', depth: 0, completed: 16, failed: 0 });
      },
    );

    it('explicit rows and a transferred input give the same answer', async () => {
      const weights = seededWeights(24, 10, 3);
      const lr = await start({ threads: 2, weights });
      const ctx = NativeContext.open(lib);
      contexts.push(ctx);
      ctx.uploadWeights(weights.w, weights.b, 10, 24);
      const x = seededFloats(9, 5 * 24);
      const expected = ctx.linearGelu(x, 5);
      const moved = x.slice();
      expect(await lr.run(moved, { rows: 5, transfer: [moved.buffer] })).toEqual(expected);
      expect(moved.byteLength).toBe(0); // it really moved
    });

    it('one buffer given to two calls: the second is OMNI_ERR_INVALID_ARGUMENT; the thread lives, nothing leaks', async () => {
      // Node posts a view of a detached buffer listed for transfer without a word, and the
      // worker then fails to read the message: its thread died, taking its native context.
      const faults = new FixtureFaults(lib);
      const baseline = faults.liveBytes();
      const weights = seededWeights(8, 4, 3);
      const lr = await start({ threads: 1, weights });
      const x = seededFloats(5, 2 * 8);
      // The serial scheduler posts after run() returns: both calls pass the check on x.
      const first = lr.run(x, { transfer: [x.buffer as ArrayBuffer] });
      const second = lr.run(x, { transfer: [x.buffer as ArrayBuffer] });
      expect((await first).length).toBe(2 * 4);
      expect((await rejection(second)).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      // The same thread still serves: its context counts the first call.
      expect((await lr.stats()).calls).toBe(1);
      await lr.close();
      expect(faults.liveBytes()).toBe(baseline);
    });

    it('weights whose fields come through a prototype (a class with getters) reach the threads whole', async () => {
      const seeded = seededWeights(6, 3, 4);
      class Layer {
        get w(): Float32Array {
          return seeded.w;
        }
        get b(): Float32Array {
          return seeded.b;
        }
        get inFeatures(): number {
          return 6;
        }
        get outFeatures(): number {
          return 3;
        }
      }
      const lr = await start({ threads: 1, weights: new Layer() });
      expect([lr.inFeatures, lr.outFeatures]).toEqual([6, 3]);
      const ctx = NativeContext.open(lib);
      contexts.push(ctx);
      ctx.uploadWeights(seeded.w, seeded.b, 3, 6);
      const x = seededFloats(8, 2 * 6);
      expect(await lr.run(x)).toEqual(ctx.linearGelu(x, 2));
    });

    it('options that come through a prototype reach the runtime whole, as Runtime.run reads them', async () => {
      // Shared defaults via Object.create: rows and cost were read, signal and transfer dropped.
      const lr = await start({ threads: 1, inFeatures: 4, outFeatures: 2 });
      const x = seededFloats(3, 2 * 4);
      const y = await lr.run(x, Object.create({ rows: 2, transfer: [x.buffer] }));
      expect(y.length).toBe(2 * 2);
      expect(x.byteLength).toBe(0); // the inherited transfer list moved it
      const aborted = AbortSignal.abort();
      await expect(lr.run(seededFloats(4, 4), Object.create({ signal: aborted }))).rejects.toMatchObject({
        name: 'AbortError',
      });
      expect(lr.report()).toMatchObject({ completed: 1, aborted: 1, depth: 0 });
    });
  });

  describe('bad input is a coded error; the worker keeps serving with nothing leaked', () => {
    const [IN, OUT] = [12, 7];
    const weights = seededWeights(IN, OUT, 5);
    const good = seededFloats(11, 3 * IN);

    it('every bad call rejects with a code and live bytes return to the baseline', async () => {
      const lr = await start({ threads: 1, weights });
      const expected = await lr.run(good);
      const baseline = await lr.stats();
      const cases: Array<[string, () => Promise<unknown>, string]> = [
        ['x not a whole number of rows', () => lr.run(good.subarray(1)), 'OMNI_ERR_INVALID_ARGUMENT'],
        ['zero rows (empty x)', () => lr.run(new Float32Array(0)), 'OMNI_ERR_INVALID_ARGUMENT'],
        ['zero rows (explicit)', () => lr.run(good, { rows: 0 }), 'OMNI_ERR_INVALID_ARGUMENT'],
        ['NaN rows', () => lr.run(good, { rows: Number.NaN }), 'OMNI_ERR_INVALID_ARGUMENT'],
        ['fractional rows', () => lr.run(good, { rows: 1.5 }), 'OMNI_ERR_INVALID_ARGUMENT'],
        // null is a mistake, not "the default" (as for cost): it must not serve x's own rows.
        ['null rows', () => lr.run(good, { rows: null as unknown as number }), 'OMNI_ERR_INVALID_ARGUMENT'],
        [
          'a Float64Array',
          () => lr.run(new Float64Array(3 * IN) as unknown as Float32Array),
          'OMNI_ERR_INVALID_ARGUMENT',
        ],
        [
          'an Int32Array',
          () => lr.run(new Int32Array(3 * IN) as unknown as Float32Array),
          'OMNI_ERR_INVALID_ARGUMENT',
        ],
        ['a plain array', () => lr.run([1, 2, 3] as unknown as Float32Array), 'OMNI_ERR_INVALID_ARGUMENT'],
        // x's length does not match the rows asked for: found before admission too.
        ['rows disagreeing with x', () => lr.run(good, { rows: 2 }), 'OMNI_ERR_INVALID_ARGUMENT'],
        // More rows than one native call takes can never be served: refused before admission.
        [
          'more than MAX_ROWS rows',
          () => lr.run(new Float32Array((MAX_ROWS + 1) * IN)),
          'OMNI_ERR_TOO_LARGE',
        ],
        ['a negative cost', () => lr.run(good, { cost: -1 }), 'OMNI_ERR_INVALID_COST'],
        ['a null cost', () => lr.run(good, { cost: null as unknown as number }), 'OMNI_ERR_INVALID_COST'],
        ['null options', () => lr.run(good, null as unknown as undefined), 'OMNI_ERR_INVALID_ARGUMENT'],
      ];
      for (const [what, call, code] of cases) {
        const err = await rejection(call());
        expect({ what, code: err.code }).toEqual({ what, code });
        // The worker still serves the same answer, and no byte was left behind.
        expect(await lr.run(good)).toEqual(expected);
        expect((await lr.stats()).liveBytes, what).toBe(baseline.liveBytes);
      }
      expect(lr.report()).toMatchObject({ state: 'ready', depth: 0, units: 0 });
      // Checked here before admission, and counted: 10 malformed inputs, null options and two
      // bad costs are invalid; too many rows is refused (it can never fit); none failed in a
      // worker.
      expect(lr.report()).toMatchObject({ invalid: 13, refused: 1, failed: 0 });
    });

    it('rows disagreeing with x hold no capacity: with room for one call, two in a row are both invalid', async () => {
      const lr = await start({ threads: 1, weights, admission: { requests: 1 } });
      const calls = [lr.run(good, { rows: 2 }), lr.run(good, { rows: 4 })];
      expect(await Promise.all(calls.map(async (c) => (await rejection(c)).code))).toEqual([
        'OMNI_ERR_INVALID_ARGUMENT',
        'OMNI_ERR_INVALID_ARGUMENT',
      ]);
      expect(lr.report()).toMatchObject({ invalid: 2, failed: 0, rejected: 0 });
    });

    it('weights that do not match their stated shape: start rejects with a coded error', async () => {
      const short: LinearWeights = { ...weights, w: weights.w.subarray(1) };
      const err = await rejection(start({ threads: 1, weights: short }));
      expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      const wrongBias: LinearWeights = { ...weights, b: new Float32Array(OUT + 1) };
      expect((await rejection(start({ threads: 1, weights: wrongBias }))).code).toBe(
        'OMNI_ERR_INVALID_ARGUMENT',
      );
      const notFloats = { ...weights, w: new Float64Array(IN * OUT) } as unknown as LinearWeights;
      expect((await rejection(start({ threads: 1, weights: notFloats }))).code).toBe(
        'OMNI_ERR_INVALID_ARGUMENT',
      );
    });

    it('NaN or out-of-range sizes at start reject with a coded error', async () => {
      for (const options of [
        { inFeatures: Number.NaN },
        { outFeatures: Number.NaN },
        { inFeatures: 0 },
        { outFeatures: 16385 },
        { workspaceCount: Number.NaN },
        { workspaceCount: 65 },
        { workspaceBytes: Number.NaN },
      ]) {
        const err = await rejection(start({ threads: 1, ...options }));
        expect({ options, code: err.code }).toEqual({ options, code: 'OMNI_ERR_INVALID_ARGUMENT' });
      }
    });
  });

  describe('injected native faults', () => {
    const [IN, OUT] = [16, 8];
    const weights = seededWeights(IN, OUT, 7);
    const x = (rows: number): Float32Array => seededFloats(100 + rows, rows * IN);

    it('a fatal error fails the call with fatal: true, moves the runtime to failed, later runs are refused', async () => {
      const lr = await start({ threads: 1, weights, faultInjection: true });
      await lr.run(x(2));
      expect(await lr.runtime.run({ inject: 'fatal' })).toBeNull();
      const err = await rejection(lr.run(x(2)));
      expect(err).toMatchObject({ code: 'OMNI_ERR_NATIVE', nativeCode: NativeStatus.FATAL, fatal: true });
      expect(lr.report()).toMatchObject({ state: 'failed', depth: 0, failed: 1 });
      expect(lr.runtime.failure).toBe(err);
      expect((await rejection(lr.run(x(2)))).code).toBe('OMNI_ERR_UNAVAILABLE');
      expect((await rejection(lr.stats())).code).toBe('OMNI_ERR_UNAVAILABLE');
    });

    it('a fatal error resolves lr.runtime.whenFailed() with the failure', async () => {
      const lr = await start({ threads: 1, weights, faultInjection: true });
      const told = lr.runtime.whenFailed();
      expect(await lr.runtime.run({ inject: 'fatal' })).toBeNull();
      const err = await rejection(lr.run(x(2)));
      expect(err).toMatchObject({ code: 'OMNI_ERR_NATIVE', fatal: true });
      expect(await told).toBe(err);
      expect(lr.runtime.failure).toBe(err);
    });

    it('a failed copy is OMNI_ERR_NATIVE (not fatal); the worker keeps serving, nothing leaked', async () => {
      const lr = await start({ threads: 1, weights, faultInjection: true });
      const expected = await lr.run(x(3));
      const baseline = await lr.stats();
      await lr.runtime.run({ inject: 'copy' });
      const err = await rejection(lr.run(x(3)));
      expect(err).toMatchObject({
        code: 'OMNI_ERR_NATIVE',
        nativeCode: NativeStatus.COPY_FAILED,
        fatal: false,
      });
      expect(lr.report().state).toBe('ready');
      const after = await lr.stats();
      expect(after.liveBytes).toBe(baseline.liveBytes);
      // The failed copy synchronized the stream before returning.
      expect(after.streamSyncs).toBe(baseline.streamSyncs + 1);
      expect(await lr.run(x(3))).toEqual(expected);
      expect(lr.report()).toMatchObject({ state: 'ready', depth: 0, failed: 1 });
    });

    it('a failed stream sync is OMNI_ERR_NATIVE DEVICE (not fatal): the runtime keeps serving, nothing leaked', async () => {
      const lr = await start({ threads: 1, weights, faultInjection: true });
      const expected = await lr.run(x(3));
      const baseline = await lr.stats();
      expect(await lr.runtime.run({ inject: 'sync' })).toBeNull();
      const err = await rejection(lr.run(x(3)));
      expect(err).toMatchObject({ code: 'OMNI_ERR_NATIVE', nativeCode: NativeStatus.DEVICE, fatal: false });
      expect(lr.report()).toMatchObject({ state: 'ready', depth: 0, failed: 1 });
      const after = await lr.stats();
      expect(after).toMatchObject({
        liveBytes: baseline.liveBytes,
        calls: baseline.calls,
        streamSyncs: baseline.streamSyncs + 1,
      });
      // `after` counts syncs: armed at 2, the next call (one sync, a cached workspace) passes.
      await lr.runtime.run({ inject: 'sync', after: 2 });
      expect(await lr.run(x(3))).toEqual(expected);
      expect(await rejection(lr.run(x(3)))).toMatchObject({ nativeCode: NativeStatus.DEVICE });
      // Armed when the runtime closes: the context's close ignores its failed sync.
      await lr.runtime.run({ inject: 'sync' });
      expect(await lr.close()).toMatchObject({ clean: true });
    });

    it.each(['bogus', 'Sync', 7, undefined])(
      'an inject of %s is refused, coded, and arms no fault',
      async (kind) => {
        const lr = await start({ threads: 1, weights, faultInjection: true });
        await lr.run(x(2));
        const err = await rejection(lr.runtime.run({ inject: kind, after: 1 }));
        expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
        // 5 rows need a new workspace: an allocation fault armed by mistake would fail it.
        expect(await lr.run(x(5))).toHaveLength(5 * OUT);
        expect(lr.report().state).toBe('ready');
      },
    );

    // A null `after` took the kind's default (copy and sync: the next one), and fatal, which
    // poisons at once, dropped an `after` that asked for later: each armed another fault. Only
    // undefined is no `after`, for fatal too: a null one poisoned the context.
    it.each([
      { inject: 'copy', after: null },
      { inject: 'sync', after: null },
      { inject: 'alloc', after: null },
      { inject: 'fatal', after: 1 },
      { inject: 'fatal', after: null },
    ])('an inject of $inject with after $after is refused, coded, and arms no fault', async (message) => {
      const lr = await start({ threads: 1, weights, faultInjection: true });
      await lr.run(x(2));
      const err = await rejection(lr.runtime.run(message));
      expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      // Copies, a sync and 5 rows' new workspace: a fault armed by mistake would fail them.
      expect(await lr.run(x(5))).toHaveLength(5 * OUT);
      expect(lr.report()).toMatchObject({ state: 'ready', failed: 1 }); // the refused inject alone
    });

    it('an allocation failing part-way through a new workspace: coded error, live bytes back to baseline', async () => {
      const lr = await start({ threads: 1, weights, faultInjection: true });
      await lr.run(x(2)); // a 2-row workspace
      const baseline = await lr.stats();
      for (const after of [1, 2, 3, 4]) {
        // 5 rows do not fit the cached workspace: the next call allocates four buffers; the `after`th fails.
        await lr.runtime.run({ inject: 'alloc', after });
        const err = await rejection(lr.run(x(5)));
        expect(err).toMatchObject({
          code: 'OMNI_ERR_NATIVE',
          nativeCode: NativeStatus.OUT_OF_MEMORY,
          fatal: false,
        });
        const now = await lr.stats();
        expect(now.liveBytes).toBe(baseline.liveBytes);
        expect(now.cachedWorkspaces).toBe(baseline.cachedWorkspaces);
      }
      expect(lr.report().state).toBe('ready');
      const ctx = NativeContext.open(lib);
      ctx.uploadWeights(weights.w, weights.b, OUT, IN);
      expect(await lr.run(x(5))).toEqual(ctx.linearGelu(x(5), 5));
      ctx.close();
      expect((await lr.stats()).cachedWorkspaces).toBe(baseline.cachedWorkspaces + 1);
    });

    // Each kind arms its own fault alone: a sync's `after` reaching the allocation hook too
    // would fail the next new workspace, which no sync fault touches.
    it('a sync injection arms no allocation fault: a new workspace is still allocated', async () => {
      const lr = await start({ threads: 1, weights, faultInjection: true });
      await lr.run(x(2)); // a 2-row workspace: 5 rows need a new one, four allocations
      await lr.runtime.run({ inject: 'sync', after: 3 });
      expect(await lr.run(x(5))).toHaveLength(5 * OUT);
      await lr.runtime.run({ inject: 'sync', after: 0 }); // disarmed: the rest are clean
      expect(await lr.run(x(5))).toHaveLength(5 * OUT);
      expect(lr.report()).toMatchObject({ state: 'ready', failed: 0 });
    });

    it('an alloc injection without `after` disarms an armed one', async () => {
      const lr = await start({ threads: 1, weights, faultInjection: true });
      await lr.runtime.run({ inject: 'alloc', after: 1 });
      await lr.runtime.run({ inject: 'alloc' });
      expect(await lr.run(x(3))).toHaveLength(3 * OUT);
    });

    it.each([null, 7, 'x', undefined])(
      'the built-in worker refuses %s as its input, coded',
      async (input) => {
        const lr = await start({ threads: 1, weights });
        expect((await rejection(lr.runtime.run(input))).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
        expect(lr.report().state).toBe('ready');
        expect((await lr.run(x(1))).length).toBe(OUT);
      },
    );

    // A `stats` key of any value answered the counters: a { x, rows, stats: false } got them back
    // instead of its rows, and an inject beside stats: true armed nothing, without a word.
    it.each([
      { name: 'stats: false', message: { stats: false } },
      { name: 'stats: 1', message: { stats: 1 } },
      { name: 'rows with stats: false', message: { x: x(2), rows: 2, stats: false } },
      { name: 'inject with stats: true', message: { inject: 'fatal', stats: true } },
      { name: 'rows with an inject', message: { x: x(2), rows: 2, inject: 'copy' } },
    ])('the built-in worker refuses $name, coded, and arms no fault', async ({ message }) => {
      const lr = await start({ threads: 1, weights, faultInjection: true });
      expect((await rejection(lr.runtime.run(message))).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(await lr.run(x(2))).toHaveLength(2 * OUT);
      expect(lr.report()).toMatchObject({ state: 'ready', failed: 1 }); // the refused call alone
    });

    it('fault injection is refused unless the runtime was started with it', async () => {
      const lr = await start({ threads: 1, weights });
      expect((await rejection(lr.runtime.run({ inject: 'fatal' }))).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(lr.report().state).toBe('ready');
      expect((await lr.run(x(1))).length).toBe(OUT);
    });
  });

  it('batch sizes varying over 1..16 settle on a handful of workspaces in the worker', async () => {
    const [IN, OUT] = [32, 16];
    const lr = await start({ threads: 1, inFeatures: IN, outFeatures: OUT, seed: 9 });
    const base = await lr.stats();
    const rowsList = seededInts(77, 200, 1, 16);
    for (let i = 0; i < rowsList.length; i += 8) {
      await Promise.all(rowsList.slice(i, i + 8).map((rows) => lr.run(seededFloats(rows, rows * IN))));
    }
    const s = await lr.stats();
    expect(s.calls - base.calls).toBe(rowsList.length);
    // One workspace (four allocations) per capacity 1, 2, 4, 8, 16 at most; at most one eviction.
    expect(s.allocations - base.allocations).toBeLessThanOrEqual(5 * 4);
    expect(s.workspaceEvictions).toBeLessThanOrEqual(1);
  });

  const good = seededWeights(16, 8);
  const badWeights: LinearWeights[] = [
    { ...good, w: good.w.subarray(1) },
    { ...good, b: good.b.subarray(1) },
    { ...good, w: new Int32Array(16 * 8) as unknown as Float32Array },
    { ...good, inFeatures: 0 },
  ];

  it('weights of the wrong shape fail start() with OMNI_ERR_INVALID_ARGUMENT before any thread starts', async () => {
    const spawn = vi.spyOn(Runtime, 'start');
    try {
      for (const weights of badWeights) {
        const err = await rejection(LinearRuntime.start({ backend: 'fixture', threads: 2, weights }));
        expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      }
      expect(spawn).not.toHaveBeenCalled();
    } finally {
      spawn.mockRestore();
    }
  });

  it('a native worker whose weight upload fails frees its context (its close hook never runs)', async () => {
    // Past LinearRuntime's own check, straight to the worker: its init opens a context, then
    // the upload throws. Every thread fails the same way, so no close hook runs anywhere.
    const faults = new FixtureFaults(loadNativeLibrary('fixture'));
    const before = faults.liveBytes();
    const weights = badWeights[0]!;
    const data: NativeWorkerData = { backend: 'fixture', device: undefined, weights };
    const err = await rejection(
      Runtime.start({ worker: builtModuleUrl('workers/native.js'), threads: 2, workerData: data }),
    );
    expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(faults.liveBytes()).toBe(before);
  });

  it('a native worker whose init throws anywhere after opening its context frees it', async () => {
    // Not only the upload: whatever throws once the context is open (here, reading weights that
    // are missing) must close it, since a thread whose init threw never runs its close hook.
    const faults = new FixtureFaults(loadNativeLibrary('fixture'));
    const before = faults.liveBytes();
    const data = { backend: 'fixture', device: undefined, weights: null } as unknown as NativeWorkerData;
    await rejection(
      Runtime.start({ worker: builtModuleUrl('workers/native.js'), threads: 2, workerData: data }),
    );
    expect(faults.liveBytes()).toBe(before);
  });

  /**
   * Starts on `weights`, runs x, lets the caller `change` its arrays, loses the only thread (the
   * built-in worker plus an `exit` task) and runs x again on its replacement: both outputs.
   */
  async function acrossReplacement(change: (weights: LinearWeights) => void): Promise<Float32Array[]> {
    const realStart = Runtime.start.bind(Runtime);
    const spawn = vi
      .spyOn(Runtime, 'start')
      .mockImplementation((options) => realStart({ ...options, worker: NATIVE_EXIT_WORKER }));
    try {
      const weights = seededWeights(6, 3, 9);
      const lr = await start({ threads: 1, weights });
      const x = seededFloats(4, 2 * 6);
      const before = await lr.run(x.slice());
      change(weights);
      expect((await rejection(lr.runtime.run({ exit: true }))).code).toBe('OMNI_ERR_WORKER_EXITED');
      const after = await lr.run(x.slice());
      expect(lr.report().state).toBe('ready');
      return [before, after];
    } finally {
      spawn.mockRestore();
    }
  }

  // piscina clones workerData again for every thread it starts: weights handed on by reference
  // reached a thread that replaced a lost one as the caller's arrays were by then.
  it("a replacement thread runs the weights given at start, though the caller's arrays were reused since", async () => {
    const [before, after] = await acrossReplacement((weights) => {
      weights.w.fill(0);
      weights.b.fill(0);
    });
    expect(after).toEqual(before);
  });

  it("a replacement thread starts though the caller's weight buffers were handed elsewhere (detached) since", async () => {
    // Before: the replacement's workerData could not be cloned, an uncaught DataCloneError in
    // the main thread (piscina starts it from a worker's exit event).
    const [before, after] = await acrossReplacement((weights) => {
      structuredClone(weights.w.buffer, { transfer: [weights.w.buffer as ArrayBuffer] });
      structuredClone(weights.b.buffer, { transfer: [weights.b.buffer as ArrayBuffer] });
    });
    expect(after).toEqual(before);
  });

  it("a clean close frees every worker thread's native context (close hook before termination)", async () => {
    // Process-wide fixture counter: worker threads share the library with this thread.
    const faults = new FixtureFaults(loadNativeLibrary('fixture'));
    const before = faults.liveBytes();
    const lr = await LinearRuntime.start({ backend: 'fixture', threads: 2, inFeatures: 64, outFeatures: 32 });
    await lr.run(seededFloats(3, 4 * 64));
    expect(faults.liveBytes()).toBeGreaterThan(before);
    await lr.close();
    expect(lr.report().state).toBe('stopped');
    expect(faults.liveBytes()).toBe(before);
  });
});

describe("stats() is the worker's own context", () => {
  afterEach(closeRuntimes);

  it('it counts the calls that thread served and the bytes its context holds', async () => {
    const lr = await start({ threads: 1, inFeatures: 16, outFeatures: 8 });
    const before = await lr.stats();
    // The context holds at least its weights and bias from the start.
    expect(before.liveBytes).toBeGreaterThanOrEqual((16 * 8 + 8) * Float32Array.BYTES_PER_ELEMENT);
    await lr.run(seededFloats(1, 2 * 16));
    const after = await lr.stats();
    expect(after.calls).toBe(before.calls + 1);
    expect(after.liveBytes).toBeGreaterThan(before.liveBytes);
  });
});
