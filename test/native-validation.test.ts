import { runInNewContext } from 'node:vm';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import type { NativeLibrary, NativeOpenOptions, NativeStats, RawNativeApi } from '../src/native/index.js';
import {
  DEFAULT_WORKSPACE_BYTES,
  FixtureFaults,
  kRawHandle,
  loadNativeLibrary,
  MAX_FEATURES,
  MAX_ROWS,
  NativeContext,
  NativeStatus,
  seededFloats,
} from '../src/native/index.js';

const [ROWS, IN, OUT] = [3, 16, 8];

function codeOf(fn: () => unknown): { code?: string; nativeCode?: number; fatal?: boolean } {
  try {
    fn();
  } catch (err) {
    return err as { code?: string; nativeCode?: number; fatal?: boolean };
  }
  throw new Error('expected the call to throw');
}

/** Options whose `key` answers `first` once, then undefined: what was checked must be what is used. */
function oneRead(key: 'workspaceCount' | 'workspaceBytes', first: number): NativeOpenOptions {
  let reads = 0;
  return Object.defineProperty({}, key, { enumerable: true, get: () => (reads++ === 0 ? first : undefined) });
}

describe('native validation (fixture)', () => {
  let lib: NativeLibrary;
  let raw: RawNativeApi;
  let faults: FixtureFaults;
  let ctx: NativeContext;
  let handle: unknown;
  let expected: Float32Array;
  let baseline: NativeStats;
  const w = seededFloats(1, OUT * IN);
  const b = seededFloats(2, OUT);
  const x = seededFloats(3, ROWS * IN);
  /** One row more than the limit, every length agreeing with it (in = out = 1). */
  const tooManyRows = (): unknown => {
    const small = NativeContext.open(lib);
    try {
      small.uploadWeights(new Float32Array([1]), new Float32Array([0]), 1, 1);
      return small.linearGelu(new Float32Array(MAX_ROWS + 1), MAX_ROWS + 1, new Float32Array(MAX_ROWS + 1));
    } finally {
      small.close();
    }
  };
  /** The fixture's reference with these arguments replacing valid ones. */
  const reference = (args: {
    x?: unknown;
    rows?: number;
    w?: unknown;
    b?: unknown;
    inF?: number;
    out?: unknown;
  }): unknown =>
    faults.referenceLinearGelu(
      (args.x ?? x) as Float32Array,
      args.rows ?? ROWS,
      (args.w ?? w) as Float32Array,
      (args.b ?? b) as Float32Array,
      OUT,
      args.inF ?? IN,
      (args.out ?? new Float32Array(ROWS * OUT)) as Float32Array,
    );

  /** The fixture library counting the linear calls that reach C (everything else is real). */
  function countingLinearCalls(): { library: NativeLibrary; calls: { reached: number } } {
    const calls = { reached: 0 };
    const omni_linear_gelu = (...args: Parameters<RawNativeApi['omni_linear_gelu']>) => {
      calls.reached += 1;
      return raw.omni_linear_gelu(...args);
    };
    return { library: { ...lib, raw: { ...raw, omni_linear_gelu } }, calls };
  }

  beforeAll(() => {
    buildFixture();
    lib = loadNativeLibrary('fixture');
    raw = lib.raw;
    faults = new FixtureFaults(lib);
  });
  beforeEach(() => {
    ctx = NativeContext.open(lib);
    handle = ctx[kRawHandle];
    ctx.uploadWeights(w, b, OUT, IN);
    expected = ctx.linearGelu(x, ROWS);
    baseline = ctx.stats();
  });
  afterEach(() => {
    // Every rejected call above left the context serving the same answer, with nothing leaked.
    expect(ctx.linearGelu(x, ROWS)).toEqual(expected);
    const after = ctx.stats();
    expect(after.liveBytes).toBe(baseline.liveBytes);
    expect(after.cachedWorkspaces).toBe(baseline.cachedWorkspaces);
    ctx.close();
  });

  describe('TypeScript checks (before the call)', () => {
    it.each([
      ['x of the wrong length', () => ctx.linearGelu(x.subarray(1), ROWS)],
      ['out of the wrong length', () => ctx.linearGelu(x, ROWS, new Float32Array(ROWS * OUT + 1))],
      ['zero rows', () => ctx.linearGelu(x, 0)],
      ['too many rows', () => ctx.linearGelu(new Float32Array(0), MAX_ROWS + 1)],
      ['NaN rows', () => ctx.linearGelu(x, Number.NaN)],
      ['fractional rows', () => ctx.linearGelu(x, 1.5)],
      ['2^32 + rows (koffi would truncate)', () => ctx.linearGelu(x, 2 ** 32 + ROWS)],
      ['rows as a string', () => ctx.linearGelu(x, '3' as unknown as number)],
      [
        'x as an Int32Array',
        () => ctx.linearGelu(new Int32Array(ROWS * IN) as unknown as Float32Array, ROWS),
      ],
      [
        'x as a Float64Array',
        () => ctx.linearGelu(new Float64Array(ROWS * IN) as unknown as Float32Array, ROWS),
      ],
      ['x as a plain array', () => ctx.linearGelu(Array.from(x) as unknown as Float32Array, ROWS)],
      ['out as a Uint8Array', () => ctx.linearGelu(x, ROWS, new Uint8Array(96) as unknown as Float32Array)],
      ['weights of the wrong length', () => ctx.uploadWeights(w.subarray(1), b, OUT, IN)],
      ['bias of the wrong length', () => ctx.uploadWeights(w, b.subarray(1), OUT, IN)],
      ['NaN features', () => ctx.uploadWeights(w, b, Number.NaN, IN)],
      ['too many features', () => ctx.uploadWeights(w, b, OUT, MAX_FEATURES + 1)],
      ['weights as an Int32Array', () => ctx.uploadWeights(new Int32Array(OUT * IN) as never, b, OUT, IN)],
      // Describing the wrong type must not go through the value's own (missing) constructor.
      [
        'x as an Int32Array without a prototype',
        () => ctx.linearGelu(Object.setPrototypeOf(new Int32Array(ROWS * IN), null), ROWS),
      ],
      [
        'weights as an Int32Array without a prototype',
        () => ctx.uploadWeights(Object.setPrototypeOf(new Int32Array(OUT * IN), null), b, OUT, IN),
      ],
      ['open options null', () => NativeContext.open(lib, null as never)],
      ['open without a library', () => NativeContext.open(undefined as never)],
      ['open on null', () => NativeContext.open(null as never)],
      ['open on an object that is no library', () => NativeContext.open({ raw: {} } as never)],
      [
        'open on a library whose omni_open is no function',
        () => NativeContext.open({ raw: { omni_open: 1 } } as never),
      ],
      ['open options a number', () => NativeContext.open(lib, 4 as never)],
      ['workspaceCount 0', () => NativeContext.open(lib, { workspaceCount: 0 })],
      ['workspaceCount 65', () => NativeContext.open(lib, { workspaceCount: 65 })],
      ['workspaceBytes NaN', () => NativeContext.open(lib, { workspaceBytes: Number.NaN })],
      // C reads 0 as its own default: the limit passed must be the one checked (at least 1).
      ['workspaceBytes 0', () => NativeContext.open(lib, { workspaceBytes: 0 })],
      // Only undefined takes the default, as LinearRuntime.start's: null opened 512 MiB.
      ['workspaceBytes null', () => NativeContext.open(lib, { workspaceBytes: null as never })],
      ['workspaceCount null', () => NativeContext.open(lib, { workspaceCount: null as never })],
      // Each option read once: these answered the check undefined and the call the first value
      // (a count of 2^32 + 1 opened a context with 1 workspace; a string aborted the process).
      [
        'workspaceCount 2^32 + 1, then undefined',
        () => NativeContext.open(lib, oneRead('workspaceCount', 2 ** 32 + 1)),
      ],
      ['workspaceBytes -5, then undefined', () => NativeContext.open(lib, oneRead('workspaceBytes', -5))],
      ['device -1', () => NativeContext.open(lib, { device: -1 })],
      ['OMNI_CUDA_DEVICE=abc', () => NativeContext.open(lib, { env: { OMNI_CUDA_DEVICE: 'abc' } })],
      ['open env null', () => NativeContext.open(lib, { env: null as never })],
      ['device 1024', () => NativeContext.open(lib, { device: 1024 })],
      // Sizes out of range whose lengths agree with them: TypeScript refuses them, not C.
      ['MAX_ROWS + 1 rows of matching length', () => tooManyRows()],
      ['zero input features with an empty w', () => ctx.uploadWeights(new Float32Array(0), b, OUT, 0)],
      [
        'MAX_FEATURES + 1 input features with a matching w',
        () => ctx.uploadWeights(new Float32Array(MAX_FEATURES + 1), b.subarray(0, 1), 1, MAX_FEATURES + 1),
      ],
      // The fixture's reference and hooks are bound the same way, so they check the same way.
      ['reference x as an Int32Array', () => reference({ x: new Int32Array(ROWS * IN) })],
      ['reference w as an Int32Array', () => reference({ w: new Int32Array(OUT * IN) })],
      ['reference b as an Int32Array', () => reference({ b: new Int32Array(OUT) })],
      ['reference out as an Int32Array', () => reference({ out: new Int32Array(ROWS * OUT) })],
      ['reference with zero rows', () => reference({ rows: 0, x: new Float32Array(0) })],
      // Lengths too, before the output is allocated: here it would be 4 GiB, for a 1-float x.
      ['reference x of the wrong length', () => reference({ x: x.subarray(1) })],
      ['reference w of the wrong length', () => reference({ w: w.subarray(1) })],
      ['reference b of the wrong length', () => reference({ b: b.subarray(1) })],
      ['reference out of the wrong length', () => reference({ out: new Float32Array(ROWS * OUT + 1) })],
      [
        'reference x of 1 float for MAX_ROWS rows to MAX_FEATURES outputs',
        () =>
          faults.referenceLinearGelu(
            new Float32Array(1),
            MAX_ROWS,
            new Float32Array(MAX_FEATURES),
            new Float32Array(MAX_FEATURES),
            MAX_FEATURES,
            1,
          ),
      ],
      ['reference with fractional rows', () => reference({ rows: 1.5, x: new Float32Array(24) })],
      [
        'reference with 0 input features',
        () => reference({ inF: 0, x: new Float32Array(0), w: new Float32Array(0) }),
      ],
      ['failAllocAfter(-1)', () => faults.failAllocAfter(-1)],
      ['failAllocAfter(1.5)', () => faults.failAllocAfter(1.5)],
      ['failAllocAfter(2^32)', () => faults.failAllocAfter(2 ** 32)],
      ['failCopyAfter(ctx, -1)', () => faults.failCopyAfter(ctx, -1)],
      ['failCopyAfter(ctx, 1.5)', () => faults.failCopyAfter(ctx, 1.5)],
      ['failSyncAfter(ctx, -1)', () => faults.failSyncAfter(ctx, -1)],
      ['failSyncAfter(ctx, 1.5)', () => faults.failSyncAfter(ctx, 1.5)],
      ['failSyncAfter(ctx, 2^32)', () => faults.failSyncAfter(ctx, 2 ** 32)],
    ])('%s: OMNI_ERR_INVALID_ARGUMENT', (_name, call) => {
      expect(codeOf(call).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    });

    it('workspaceCount 2, then undefined: the context opens', () => {
      // Read again for the call, the count was undefined there (0), and the open was refused.
      const opened = NativeContext.open(lib, oneRead('workspaceCount', 2));
      expect(opened.closed).toBe(false);
      opened.close();
    });
  });

  describe('views that misreport their length', () => {
    // A 1-element view into a larger buffer, so an overrun would land in guarded memory.
    function guarded(): { buffer: Float32Array; view: Float32Array } {
      const buffer = new Float32Array(ROWS * OUT + 8).fill(7);
      return { buffer, view: buffer.subarray(0, 1) };
    }
    class Liar extends Float32Array {
      override get length(): number {
        return ROWS * OUT;
      }
    }

    it('a shadowed length property never reaches C: OMNI_ERR_INVALID_ARGUMENT, nothing written', () => {
      const { buffer, view } = guarded();
      Object.defineProperty(view, 'length', { value: ROWS * OUT });
      expect(codeOf(() => ctx.linearGelu(x, ROWS, view)).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(Array.from(buffer).every((v) => v === 7)).toBe(true);
      const xs = x.subarray(0, 1);
      Object.defineProperty(xs, 'length', { value: ROWS * IN });
      expect(codeOf(() => ctx.linearGelu(xs, ROWS)).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      const ws = w.subarray(0, 1);
      Object.defineProperty(ws, 'length', { value: OUT * IN });
      expect(codeOf(() => ctx.uploadWeights(ws, b, OUT, IN)).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    });

    it('a subclass whose length getter lies is measured by its real length', () => {
      const { buffer } = guarded();
      const liar = new Liar(buffer.buffer as ArrayBuffer, 0, 1);
      expect(liar.length).toBe(ROWS * OUT);
      expect(codeOf(() => ctx.linearGelu(x, ROWS, liar)).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(Array.from(buffer).every((v) => v === 7)).toBe(true);
    });

    it('accepts a Float32Array made in another realm', () => {
      const foreign = runInNewContext(`new Float32Array(${ROWS * IN})`) as Float32Array;
      foreign.set(x);
      expect(foreign instanceof Float32Array).toBe(false);
      expect(ctx.linearGelu(foreign, ROWS)).toEqual(expected);
    });
  });

  describe('C checks (raw calls past TypeScript)', () => {
    const y = new Float32Array(ROWS * OUT);
    // y's first element is b's last: one shared float is an overlap.
    const shared = new Float32Array(OUT + ROWS * OUT);
    shared.set(b);
    const bShared = shared.subarray(0, OUT);
    const overlapsB = shared.subarray(OUT - 1, OUT - 1 + ROWS * OUT);
    const rawReference = (args: {
      rows?: number;
      xLen?: number;
      bLen?: number;
      y?: Float32Array | null;
      yLen?: number;
    }): number =>
      lib.fixture!.omni_fixture_reference_linear_gelu(
        x,
        args.xLen ?? x.length,
        args.rows ?? ROWS,
        w,
        w.length,
        args.y === overlapsB ? bShared : b,
        args.bLen ?? OUT,
        OUT,
        IN,
        args.y === undefined ? y : args.y,
        args.yLen ?? ROWS * OUT,
      );
    it.each([
      ['x_len mismatch', 'ctx', () => raw.omni_linear_gelu(handle, x, x.length - 1, ROWS, y, y.length)],
      ['y_len mismatch', 'ctx', () => raw.omni_linear_gelu(handle, x, x.length, ROWS, y, y.length + 1)],
      ['zero rows', 'ctx', () => raw.omni_linear_gelu(handle, x, 0, 0, y, 0)],
      [
        'too many rows',
        'ctx',
        () => raw.omni_linear_gelu(handle, x, (MAX_ROWS + 1) * IN, MAX_ROWS + 1, y, y.length),
      ],
      ['a length of 2^53', 'ctx', () => raw.omni_linear_gelu(handle, x, 2 ** 53, ROWS, y, y.length)],
      ['null x', 'ctx', () => raw.omni_linear_gelu(handle, null, x.length, ROWS, y, y.length)],
      ['null y', 'ctx', () => raw.omni_linear_gelu(handle, x, x.length, ROWS, null, y.length)],
      ['null context', 'thread', () => raw.omni_linear_gelu(null, x, x.length, ROWS, y, y.length)],
      ['w_len mismatch', 'ctx', () => raw.omni_upload_weights(handle, w, w.length - 1, b, b.length, OUT, IN)],
      ['b_len mismatch', 'ctx', () => raw.omni_upload_weights(handle, w, w.length, b, b.length + 1, OUT, IN)],
      ['zero features', 'ctx', () => raw.omni_upload_weights(handle, w, 0, b, 0, 0, IN)],
      [
        'features over the limit',
        'ctx',
        () => raw.omni_upload_weights(handle, w, w.length, b, 1, 1, MAX_FEATURES + 1),
      ],
      ['null weights', 'ctx', () => raw.omni_upload_weights(handle, null, w.length, b, b.length, OUT, IN)],
      ['stats without an out struct', 'ctx', () => raw.omni_stats(handle, null)],
      [
        'open with workspace_count 65',
        'thread',
        () => raw.omni_open(0, { workspace_count: 65, reserved: 0, workspace_bytes: 0 }, [null]),
      ],
      [
        'open with reserved set',
        'thread',
        () => raw.omni_open(0, { workspace_count: 0, reserved: 1, workspace_bytes: 0 }, [null]),
      ],
      ['open on device -1', 'thread', () => raw.omni_open(-1, null, [null])],
      ['reference with zero rows', 'thread', () => rawReference({ rows: 0, xLen: 0, yLen: 0 })],
      ['reference b_len mismatch', 'thread', () => rawReference({ bLen: OUT - 1 })],
      ['reference null y', 'thread', () => rawReference({ y: null })],
      ['reference y sharing bytes with b', 'thread', () => rawReference({ y: overlapsB })],
    ] as const)('%s: OMNI_E_INVALID_ARGUMENT with a message', (_name, where, call) => {
      expect(call()).toBe(NativeStatus.INVALID_ARGUMENT);
      // A fresh context says "no error" until something fails on it; without one, the thread slot speaks.
      const message = raw.omni_last_error(where === 'ctx' ? handle : null);
      expect(message).not.toBe('no error');
      expect(message.length).toBeGreaterThan(0);
    });

    it('a rejected raw call leaves y untouched', () => {
      const out = new Float32Array(ROWS * OUT).fill(5);
      expect(raw.omni_linear_gelu(handle, x, x.length + 1, ROWS, out, out.length)).toBe(
        NativeStatus.INVALID_ARGUMENT,
      );
      expect(out.every((v) => v === 5)).toBe(true);
    });
  });

  describe('native state errors surface as NativeError', () => {
    it('linearGelu before uploadWeights: OMNI_E_NOT_INITIALISED', () => {
      const fresh = NativeContext.open(lib);
      try {
        const err = codeOf(() => fresh.linearGelu(x, ROWS));
        expect(err).toMatchObject({
          code: 'OMNI_ERR_NATIVE',
          nativeCode: NativeStatus.NOT_INITIALISED,
          fatal: false,
        });
      } finally {
        fresh.close();
      }
    });

    it('a request needing more scratch than workspaceBytes: OMNI_E_WORKSPACE_LIMIT', () => {
      const small = NativeContext.open(lib, { workspaceBytes: 1024 });
      try {
        small.uploadWeights(w, b, OUT, IN);
        const rows = 64; // 2 * 64 * (16 + 8) * 4 bytes > 1024
        const err = codeOf(() => small.linearGelu(new Float32Array(rows * IN), rows));
        expect(err).toMatchObject({ code: 'OMNI_ERR_NATIVE', nativeCode: NativeStatus.WORKSPACE_LIMIT });
        expect(small.stats().cachedWorkspaces).toBe(0);
      } finally {
        small.close();
      }
    });

    it('over the workspace limit, the 4 GiB output is never allocated and C never called', () => {
      const { library, calls } = countingLinearCalls();
      const wide = NativeContext.open(library); // the default 512 MiB limit
      try {
        // 1 -> MAX_FEATURES: MAX_ROWS rows of x are 256 KiB, of y 4 GiB; scratch 8 GiB > 512 MiB.
        wide.uploadWeights(new Float32Array(MAX_FEATURES), new Float32Array(MAX_FEATURES), MAX_FEATURES, 1);
        const xs = new Float32Array(MAX_ROWS);
        const before = process.memoryUsage().arrayBuffers;
        const err = codeOf(() => wide.linearGelu(xs, MAX_ROWS));
        const grown = process.memoryUsage().arrayBuffers - before;
        expect(err).toMatchObject({
          code: 'OMNI_ERR_NATIVE',
          nativeCode: NativeStatus.WORKSPACE_LIMIT,
          fatal: false,
        });
        expect(calls.reached).toBe(0);
        expect(grown).toBeLessThan(2 ** 30);
        // A call that fits still goes through (the limit's exact edge: the workspace-cache tests).
        expect(wide.linearGelu(new Float32Array(2), 2).length).toBe(2 * MAX_FEATURES);
        expect(calls.reached).toBe(1);
      } finally {
        wide.close();
      }
    });

    it('C is given the very workspace limit the early check uses, never its own default', () => {
      // With 0 ("C's default") C would enforce whatever default the library was built with,
      // and the check made before allocating the output could disagree with it.
      const given: number[] = [];
      const spied: NativeLibrary = {
        ...lib,
        raw: {
          ...raw,
          omni_open: (...args: Parameters<RawNativeApi['omni_open']>) => {
            given.push(Number(args[1]?.workspace_bytes));
            return raw.omni_open(...args);
          },
        },
      };
      for (const options of [{}, { workspaceBytes: 4096 }]) NativeContext.open(spied, options).close();
      expect(given).toEqual([DEFAULT_WORKSPACE_BYTES, 4096]);
    });

    it('the workspace limit as C counts it (x and y, on the device and staged): found before C is called', () => {
      const { library, calls } = countingLinearCalls();
      const row = 2 * (IN + OUT) * Float32Array.BYTES_PER_ELEMENT; // 192 bytes
      const ctx = NativeContext.open(library, { workspaceBytes: 5 * row });
      try {
        ctx.uploadWeights(w, b, OUT, IN);
        // 6 rows need 1152 bytes: over the limit, though under it were a row counted once.
        const err = codeOf(() => ctx.linearGelu(new Float32Array(6 * IN), 6));
        expect(err).toMatchObject({ code: 'OMNI_ERR_NATIVE', nativeCode: NativeStatus.WORKSPACE_LIMIT });
        expect(calls.reached).toBe(0);
        // Exactly the limit goes through.
        expect(ctx.linearGelu(new Float32Array(5 * IN), 5)).toHaveLength(5 * OUT);
        expect(calls.reached).toBe(1);
      } finally {
        ctx.close();
      }
    });

    it('a closed context refuses every call; close is idempotent', () => {
      const other = NativeContext.open(lib);
      other.close();
      other.close();
      expect(other.closed).toBe(true);
      expect(codeOf(() => other.linearGelu(x, ROWS)).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(codeOf(() => other.stats()).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    });
  });
});
