/**
 * LinearRuntime's options: checked at start before any thread starts, each one observed to
 * reach the runtime or its workers (also through a prototype), and the rest handed through
 * unchanged.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_CLAIM_SLOTS } from '../src/admission/layout.js';
import {
  LinearRuntime,
  type LinearRuntimeOptions,
  type LinearWeights,
  Runtime,
  seededWeights,
} from '../src/index.js';
import { loadNativeLibrary, MAX_FEATURES, NativeContext, seededFloats } from '../src/native/index.js';
import { closeRuntimes, runtimes, start } from './fixtures/native-runtime-harness.js';
import { rejection } from './fixtures/runtime-harness.js';
import { thrownCode } from './fixtures/thrown.js';

describe('LinearRuntime.start option checks', () => {
  afterEach(closeRuntimes);

  it.each([
    ['null options', null],
    ['a string for options', 'fixture'],
    ['a NaN seed', { backend: 'fixture', seed: Number.NaN }],
    ['a fractional seed', { backend: 'fixture', seed: 1.5 }],
    ['a seed above 2^32-1', { backend: 'fixture', seed: 2 ** 32 }],
    ['a NaN seed beside weights', { backend: 'fixture', weights: seededWeights(4, 4), seed: Number.NaN }],
    // Only undefined takes the default 256, as for every other option: null is a mistake.
    ['a null inFeatures', { backend: 'fixture', inFeatures: null }],
    ['a null outFeatures', { backend: 'fixture', outFeatures: null }],
    [
      'inFeatures that disagree with the weights',
      { backend: 'fixture', weights: seededWeights(4, 4), inFeatures: 8 },
    ],
    [
      'outFeatures that disagree with the weights',
      { backend: 'fixture', weights: seededWeights(4, 4), outFeatures: 2 },
    ],
  ])('%s: OMNI_ERR_INVALID_ARGUMENT before any thread starts', async (_what, options) => {
    const spawn = vi.spyOn(Runtime, 'start');
    try {
      const err = await rejection(LinearRuntime.start(options as LinearRuntimeOptions));
      expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(spawn).not.toHaveBeenCalled();
    } finally {
      spawn.mockRestore();
    }
  });

  // The threads' NativeContext.open checks these too, but only once threads have started.
  it.each([
    ['device -1', { device: -1 }],
    ['device 1.5', { device: 1.5 }],
    ['a string device', { device: '0' }],
    ['workspaceCount 0', { workspaceCount: 0 }],
    ['workspaceCount 65', { workspaceCount: 65 }],
    ['workspaceCount NaN', { workspaceCount: Number.NaN }],
    ['a string faultInjection (it would silently stay off)', { faultInjection: 'yes' }],
    ['a number faultInjection (so would it)', { faultInjection: 1 }],
  ])('%s on the fixture: OMNI_ERR_INVALID_ARGUMENT before any thread starts', async (_what, options) => {
    const spawn = vi.spyOn(Runtime, 'start');
    try {
      const err = await rejection(start({ threads: 1, ...(options as LinearRuntimeOptions) }));
      expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(spawn).not.toHaveBeenCalled();
    } finally {
      spawn.mockRestore();
    }
  });

  it('a malformed OMNI_CUDA_DEVICE on the fixture: OMNI_ERR_INVALID_ARGUMENT before any thread starts', async () => {
    vi.stubEnv('OMNI_CUDA_DEVICE', 'abc');
    const spawn = vi.spyOn(Runtime, 'start');
    try {
      const err = await rejection(start({ threads: 1 }));
      expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(spawn).not.toHaveBeenCalled();
    } finally {
      spawn.mockRestore();
      vi.unstubAllEnvs();
    }
  });

  // The library path names nothing: an option checked only after loading it would surface as
  // OMNI_ERR_LIBRARY_NOT_FOUND (and 'auto' would first open a CUDA context to probe).
  it.each([
    ['threads 0', { threads: 0 }, 'OMNI_ERR_INVALID_ARGUMENT'],
    ['startTimeoutMs 0', { startTimeoutMs: 0 }, 'OMNI_ERR_INVALID_ARGUMENT'],
    ['admission null', { admission: null }, 'OMNI_ERR_INVALID_ARGUMENT'],
    ['admission.requests 0', { admission: { requests: 0 } }, 'OMNI_ERR_INVALID_BOUND'],
    // A valid bound for a BoundedAdmission, but above the claim slots a runtime has.
    [
      'admission.requests above MAX_CLAIM_SLOTS',
      { admission: { requests: MAX_CLAIM_SLOTS + 1 } },
      'OMNI_ERR_INVALID_BOUND',
    ],
  ])('%s is refused before the native library is loaded', async (_what, options, code) => {
    const err = await rejection(
      start({
        libraries: { fixture: '/nonexistent/libomni_fixture.so' },
        ...(options as LinearRuntimeOptions),
      }),
    );
    expect(err.code).toBe(code);
  });

  // Public on its own: its shape is checked before 4 x in x out bytes are allocated and filled.
  it.each([
    ['a negative width', () => seededWeights(-1, 4)],
    ['a NaN width', () => seededWeights(Number.NaN, 4)],
    ['a width above MAX_FEATURES', () => seededWeights(4, MAX_FEATURES + 1)],
    ['2^20 x 2^20 (4 TiB of weights)', () => seededWeights(2 ** 20, 2 ** 20)],
    ['a negative seed', () => seededWeights(4, 4, -1)],
    ['a fractional seed', () => seededWeights(4, 4, 1.5)],
  ])('seededWeights with %s: OMNI_ERR_INVALID_ARGUMENT', (_what, call) => {
    expect(thrownCode(call)).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  it('a shape given with the weights that agrees with them is accepted', async () => {
    const lr = await start({ threads: 1, weights: seededWeights(4, 2), inFeatures: 4, outFeatures: 2 });
    expect((await lr.run(seededFloats(1, 2 * 4))).length).toBe(2 * 2);
  });
});

describe('LinearRuntime passes its options through (each one observed)', () => {
  afterEach(closeRuntimes);

  it("the runtime's options read through a prototype reach it too, as Runtime.start reads them", async () => {
    // Shared defaults via Object.create: a rest spread kept only own properties and started an
    // unbounded serial runtime with a default deadline of none.
    const lr = await LinearRuntime.start(
      Object.create({
        backend: 'fixture',
        threads: 2,
        admission: { requests: 1, units: 4 },
        deadlineMs: 60_000,
        inFeatures: 4,
        outFeatures: 2,
      }),
    );
    runtimes.push(lr);
    expect(lr.report()).toMatchObject({ capacity: 1, unitCapacity: 4 });
    expect(lr.deadlineMs).toBe(60_000);
  });

  function expectedFor(weights: LinearWeights, x: Float32Array, rows: number): Float32Array {
    const ctx = NativeContext.open(loadNativeLibrary('fixture'));
    try {
      ctx.uploadWeights(weights.w, weights.b, weights.outFeatures, weights.inFeatures);
      return ctx.linearGelu(x, rows);
    } finally {
      ctx.close();
    }
  }

  it('without a shape or seed it runs seeded weights 256 -> 256 with seed 1', async () => {
    const lr = await start({ threads: 1 });
    expect([lr.inFeatures, lr.outFeatures]).toEqual([256, 256]);
    const x = seededFloats(5, 2 * 256);
    expect(await lr.run(x.slice())).toEqual(expectedFor(seededWeights(256, 256, 1), x, 2));
  });

  it('the seed chooses the weights the workers run', async () => {
    const lr = await start({ threads: 1, inFeatures: 8, outFeatures: 4, seed: 9 });
    const x = seededFloats(6, 3 * 8);
    const y = await lr.run(x.slice());
    expect(y).toEqual(expectedFor(seededWeights(8, 4, 9), x, 3));
    expect(y).not.toEqual(expectedFor(seededWeights(8, 4, 1), x, 3));
  });

  it('the cost defaults to rows: more rows than the unit ceiling is OMNI_ERR_TOO_LARGE unless a cost is given', async () => {
    const lr = await start({
      threads: 1,
      inFeatures: 4,
      outFeatures: 2,
      admission: { requests: 4, units: 2 },
    });
    expect(await lr.run(seededFloats(1, 2 * 4))).toHaveLength(2 * 2);
    await expect(lr.run(seededFloats(2, 3 * 4))).rejects.toMatchObject({
      code: 'OMNI_ERR_TOO_LARGE',
      cost: 3,
    });
    expect(await lr.run(seededFloats(2, 3 * 4), { cost: 1 })).toHaveLength(3 * 2);
  });

  it('stats() is admitted at cost 1: refused while the units are full', async () => {
    const lr = await start({
      threads: 1,
      inFeatures: 4,
      outFeatures: 2,
      admission: { requests: 4, units: 2 },
    });
    // A thread gives a call's capacity back as soon as its native call ends, which can be before
    // the stats() below on a loaded machine. So the one thread is kept busy by a call of cost 0,
    // and the call holding both units waits in the pool's queue: it cannot be dispatched (nor
    // release) until the main thread's event loop takes the first one's reply.
    const busy = lr.run(seededFloats(1, 4), { cost: 0 });
    const queued = lr.run(seededFloats(2, 2 * 4));
    await expect(lr.stats()).rejects.toMatchObject({ code: 'OMNI_ERR_REJECTED', reason: 'units' });
    await Promise.all([busy, queued]);
    expect((await lr.stats()).calls).toBe(2);
  });

  // Mutant: stats() at cost 2 (linear-runtime.ts): refused while full all the same, but too large
  // for a ceiling of one unit.
  it('stats() costs exactly 1: served under a ceiling of one unit', async () => {
    const lr = await start({
      threads: 1,
      inFeatures: 4,
      outFeatures: 2,
      admission: { requests: 4, units: 1 },
    });
    expect((await lr.stats()).calls).toBe(0);
    expect(lr.report()).toMatchObject({ completed: 1, refused: 0 });
  });

  it('a per-call deadlineMs reaches the runtime: an invalid one is OMNI_ERR_INVALID_ARGUMENT', async () => {
    const lr = await start({ threads: 1, inFeatures: 4, outFeatures: 2 });
    await expect(lr.run(seededFloats(1, 4), { deadlineMs: -1 })).rejects.toMatchObject({
      code: 'OMNI_ERR_INVALID_ARGUMENT',
    });
    expect(lr.report()).toMatchObject({ invalid: 1, completed: 0 });
  });

  it('fractional rows that happen to match the length of x are still OMNI_ERR_INVALID_ARGUMENT before admission', async () => {
    const lr = await start({ threads: 1, inFeatures: 4, outFeatures: 2 });
    await expect(lr.run(new Float32Array(6), { rows: 1.5 })).rejects.toMatchObject({
      code: 'OMNI_ERR_INVALID_ARGUMENT',
    });
    expect(lr.report()).toMatchObject({ invalid: 1, failed: 0 });
  });

  it('an option whose getter throws rejects the call, as Runtime.run does: never a throw from run(), counted invalid', async () => {
    const lr = await start({ threads: 1, inFeatures: 4, outFeatures: 2 });
    const keys = ['rows', 'cost', 'signal', 'deadlineMs', 'transfer'];
    for (const key of keys) {
      const boom = new Error(key);
      const options = Object.defineProperty({}, key, {
        get() {
          throw boom;
        },
      });
      let call: Promise<unknown> | undefined;
      expect(() => {
        call = lr.run(seededFloats(1, 2 * 4), options);
      }, key).not.toThrow();
      await expect(call, key).rejects.toBe(boom);
    }
    // Every call made ends in one outcome: these ended before admission, each invalid.
    expect(lr.report()).toMatchObject({ invalid: keys.length, depth: 0, completed: 0, failed: 0 });
  });

  it('a call to a closed LinearRuntime is OMNI_ERR_UNAVAILABLE whatever its arguments, counted unavailable, as Runtime.run does', async () => {
    // 16 -> 8 takes 192 bytes a row: 1024 bytes hold 5 rows, so 6 rows is too many.
    const lr = await start({ threads: 1, inFeatures: 16, outFeatures: 8, workspaceBytes: 1024 });
    await lr.close();
    const calls: [string, () => Promise<unknown>][] = [
      ['run options deadlineMs -1', () => lr.run(seededFloats(1, 16), { deadlineMs: -1 })],
      ['x an Int32Array', () => lr.run(new Int32Array(16) as unknown as Float32Array)],
      ['x not whole rows', () => lr.run(new Float32Array(15))],
      ['rows disagreeing with x', () => lr.run(new Float32Array(16), { rows: 2 })],
      ['run options null', () => lr.run(new Float32Array(16), null as unknown as undefined)],
      ['more rows than one call takes', () => lr.run(new Float32Array(6 * 16))],
    ];
    for (const [what, call] of calls)
      expect((await rejection(call())).code, what).toBe('OMNI_ERR_UNAVAILABLE');
    expect(lr.report()).toMatchObject({ unavailable: calls.length, invalid: 0, refused: 0 });
  });

  it('the workspace byte limit reaches the workers: their cache stays within it', async () => {
    // 16 -> 8 takes 192 bytes a row: 1024 bytes hold 5 rows, and not the workspaces of 1, 2, 4 and 5 rows together.
    const lr = await start({ threads: 1, inFeatures: 16, outFeatures: 8, workspaceBytes: 1024 });
    for (const rows of [1, 2, 4, 5]) await lr.run(seededFloats(rows, rows * 16));
    expect((await lr.stats()).workspaceBytes).toBeLessThanOrEqual(1024);
  });
});

describe('LinearRuntime hands its remaining options and results through unchanged', () => {
  afterEach(closeRuntimes);

  it('the row count comes from the array itself, not from an own length property', async () => {
    const lr = await start({ threads: 1, inFeatures: 4, outFeatures: 2 });
    const x = seededFloats(1, 2 * 4);
    Object.defineProperty(x, 'length', { value: 4 });
    expect(await lr.run(x)).toHaveLength(2 * 2);
  });

  it('libraries with an undefined entry are accepted', async () => {
    const lr = await start({ threads: 1, inFeatures: 4, outFeatures: 2, libraries: { fixture: undefined } });
    expect(await lr.run(seededFloats(1, 4))).toHaveLength(2);
  });

  it('seed 0 is a seed like any other', async () => {
    const lr = await start({ threads: 1, inFeatures: 4, outFeatures: 2, seed: 0 });
    expect(await lr.run(seededFloats(1, 4))).toHaveLength(2);
  });

  it('deadlineMs reads the runtime default given at start', async () => {
    const lr = await start({ threads: 1, inFeatures: 4, outFeatures: 2, deadlineMs: 60_000 });
    expect(lr.deadlineMs).toBe(60_000);
  });

  it('close() checks its options: a negative timeout is OMNI_ERR_INVALID_ARGUMENT', async () => {
    const lr = await start({ threads: 1, inFeatures: 4, outFeatures: 2 });
    expect((await rejection(lr.close({ timeoutMs: -1 }))).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
  });

  it('too many rows names the rows and the row limit in its error', async () => {
    const lr = await start({ threads: 1, inFeatures: 16, outFeatures: 8, workspaceBytes: 1024 });
    await expect(lr.run(seededFloats(2, 6 * 16))).rejects.toMatchObject({
      code: 'OMNI_ERR_TOO_LARGE',
      cost: 6,
      unitCapacity: 5,
    });
  });
});
