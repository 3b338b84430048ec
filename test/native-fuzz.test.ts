/**
 * Randomized inputs to the native linear layer, straight through NativeContext and through
 * LinearRuntime. Legal inputs must give the float64 reference's answer (NaN and infinities
 * where IEEE puts them); illegal ones a coded error before any native work; either way the
 * context keeps serving and the fixture's live bytes come back to where they were. A fixed seed
 * and run count (printed; NATIVE_FUZZ_SEED, NATIVE_FUZZ_RUNS) make a failure reproducible.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildFixture } from '../scripts/build-native.mjs';
import { LinearRuntime, type LinearWeights, Runtime, seededWeights } from '../src/index.js';
import { rowsPerCall } from '../src/linear/linear-runtime.js';
import type { NativeLibrary } from '../src/native/index.js';
import {
  FixtureFaults,
  loadNativeLibrary,
  MAX_FEATURES,
  MAX_ROWS,
  NativeContext,
  NativeStatus,
  referenceLinearGelu,
  seededFloats,
} from '../src/native/index.js';
import { outputTolerance, U } from './fixtures/native-tolerance.js';
import { thrownCode } from './fixtures/thrown.js';

const SEED = Number(process.env.NATIVE_FUZZ_SEED ?? 20261201);
const RUNS = Number(process.env.NATIVE_FUZZ_RUNS ?? 100);
const FLT_MAX = 3.4028234663852886e38;

/** Values that stress IEEE handling; most entries stay ordinary. */
const SPECIALS = [Number.NaN, Infinity, -Infinity, -0, 0, 1e-40, -1e-40, 1e-45, 1e18, -1e18, 3.4e38];

/**
 * Worst violation of the stated tolerance (test/fixtures/native-tolerance.ts), IEEE-aware: where
 * the double reference is NaN the result must be NaN, where it is infinite the result must be
 * the same infinity. Returns the first offending index, or -1.
 */
function firstMismatch(
  got: Float32Array,
  x: Float32Array,
  w: Float32Array,
  b: Float32Array,
  rows: number,
  outF: number,
  inF: number,
): number {
  const want = referenceLinearGelu(x, rows, w, b, outF, inF);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outF; o++) {
      const i = r * outF + o;
      const ref = want[i]!;
      const y = got[i]!;
      let abs = 0;
      let finite = 0;
      for (let k = -1; k < inF; k++) {
        const term = Math.abs(k < 0 ? b[o]! : x[r * inF + k]! * w[o * inF + k]!);
        abs += term;
        if (Number.isFinite(term)) finite += term;
      }
      // Past float32's range a float partial sum may overflow where the double one does not (an
      // infinity, and from GELU's tail a NaN): the tolerance is unbounded there.
      if (finite * (1 + (inF + 1) * U) >= FLT_MAX) continue;
      if (Number.isNaN(ref) || !Number.isFinite(ref)) {
        if (!Object.is(y, ref)) return i;
        continue;
      }
      if (!(Math.abs(y - ref) <= outputTolerance(inF, abs, ref))) return i;
    }
  }
  return -1;
}

/** Floats with some specials sprinkled in (rate 0 = none). */
function floatsWith(seed: number, length: number, scale: number, rate: number): Float32Array {
  const out = seededFloats(seed, length, scale);
  if (rate === 0) return out;
  const pick = seededFloats(seed ^ 0x5bd1e995, length * 2);
  for (let i = 0; i < length; i++) {
    if ((pick[2 * i]! + 1) / 2 < rate) {
      out[i] = SPECIALS[Math.floor(((pick[2 * i + 1]! + 1) / 2) * SPECIALS.length) % SPECIALS.length]!;
    }
  }
  return out;
}

type Placement = 'plain' | 'offset' | 'shared' | 'shared-offset';

/** The same floats in a view of the given kind (an offset view sits inside a larger buffer). */
function place(values: Float32Array, how: Placement, pad: number): Float32Array {
  const shared = how === 'shared' || how === 'shared-offset';
  const offset = how === 'offset' || how === 'shared-offset' ? pad : 0;
  const bytes = (values.length + offset + pad) * 4;
  const all = new Float32Array(shared ? new SharedArrayBuffer(bytes) : new ArrayBuffer(bytes)).fill(-99);
  const view = all.subarray(offset, offset + values.length);
  view.set(values);
  return view;
}

/** Whether every float of the view's buffer outside the view still holds place()'s filler. */
function untouchedAround(view: Float32Array): boolean {
  const all = new Float32Array(view.buffer);
  const first = view.byteOffset / 4;
  return all.every((v, i) => (i >= first && i < first + view.length) || v === -99);
}

const placement = fc.constantFrom<Placement>('plain', 'offset', 'shared', 'shared-offset');

describe(`native fuzz (fixture; seed ${SEED}, ${RUNS} runs; NATIVE_FUZZ_SEED, NATIVE_FUZZ_RUNS)`, () => {
  let lib: NativeLibrary;
  let faults: FixtureFaults;
  beforeAll(() => {
    buildFixture();
    lib = loadNativeLibrary('fixture');
    faults = new FixtureFaults(lib);
  });

  it('NativeContext: legal calls match the reference; a large call leaves no residue for a small one', () => {
    const shape = fc.record({
      inF: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 250, max: 300 })),
      outF: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 60, max: 70 })),
      rows: fc.integer({ min: 1, max: 200 }),
      small: fc.integer({ min: 1, max: 9 }),
      seed: fc.integer({ min: 0, max: 2 ** 31 }),
      rate: fc.constantFrom(0, 0, 0.01, 0.2),
      xAt: placement,
      outAt: fc.option(placement),
      workspaceCount: fc.integer({ min: 1, max: 4 }),
    });
    fc.assert(
      fc.property(shape, (s) => {
        const baseline = faults.liveBytes();
        const w = floatsWith(s.seed + 1, s.outF * s.inF, 1 / Math.sqrt(s.inF), s.rate / 4);
        const b = floatsWith(s.seed + 2, s.outF, 0.5, s.rate / 4);
        const x = place(floatsWith(s.seed + 3, s.rows * s.inF, 2, s.rate), s.xAt, 3);
        const xSmall = floatsWith(s.seed + 4, s.small * s.inF, 2, s.rate);
        const ctx = NativeContext.open(lib, { workspaceCount: s.workspaceCount });
        const fresh = NativeContext.open(lib);
        try {
          ctx.uploadWeights(w, b, s.outF, s.inF);
          fresh.uploadWeights(w, b, s.outF, s.inF);
          const out = s.outAt === null ? undefined : place(new Float32Array(s.rows * s.outF), s.outAt, 5);
          const y = ctx.linearGelu(x, s.rows, out);
          if (out !== undefined) {
            expect(y).toBe(out);
            expect(untouchedAround(out)).toBe(true);
          }
          expect(untouchedAround(x)).toBe(true);
          expect(firstMismatch(y, x, w, b, s.rows, s.outF, s.inF)).toBe(-1);
          // The large call's workspace (or its data) must not leak into the small one's answer.
          const small = ctx.linearGelu(xSmall, s.small);
          expect(small).toEqual(fresh.linearGelu(xSmall, s.small));
          expect(firstMismatch(small, xSmall, w, b, s.small, s.outF, s.inF)).toBe(-1);
          const stats = ctx.stats();
          expect(stats.cachedWorkspaces).toBeLessThanOrEqual(s.workspaceCount);
          expect(stats.calls).toBe(2);
        } finally {
          ctx.close();
          fresh.close();
        }
        expect(faults.liveBytes()).toBe(baseline);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
  });

  it('at the documented limits: MAX_ROWS rows, MAX_FEATURES wide in or out, served and right; one more refused', () => {
    const edge = (max: number): fc.Arbitrary<number> => fc.constantFrom(1, 2, max - 1, max);
    const shape = fc
      .record({ rows: edge(MAX_ROWS), inF: edge(MAX_FEATURES), outF: edge(MAX_FEATURES), seed: fc.nat() })
      // One dimension at its limit at a time keeps each case to a few MiB.
      .filter((s) => s.rows * s.inF * s.outF <= 2 * MAX_ROWS && s.inF * s.outF <= 2 * MAX_FEATURES);
    fc.assert(
      fc.property(shape, ({ rows, inF, outF, seed }) => {
        const w = floatsWith(seed, inF * outF, 1 / Math.sqrt(inF), 0);
        const b = floatsWith(seed + 1, outF, 0.5, 0);
        const x = floatsWith(seed + 2, rows * inF, 2, 0.001);
        const ctx = NativeContext.open(lib);
        try {
          ctx.uploadWeights(w, b, outF, inF);
          expect(firstMismatch(ctx.linearGelu(x, rows), x, w, b, rows, outF, inF)).toBe(-1);
          expect(
            thrownCode(() =>
              ctx.uploadWeights(new Float32Array(MAX_FEATURES + 1), b.subarray(0, 1), 1, MAX_FEATURES + 1),
            ),
          ).toBe('OMNI_ERR_INVALID_ARGUMENT');
          expect(thrownCode(() => ctx.linearGelu(x, MAX_ROWS + 1))).toBe('OMNI_ERR_INVALID_ARGUMENT');
        } finally {
          ctx.close();
        }
      }),
      { seed: SEED, numRuns: Math.ceil(RUNS / 4), endOnFailure: true },
    );
  });

  it('the row limit LinearRuntime computes is the one the C side enforces, at any shape and byte limit', () => {
    const limits = fc.record({
      inF: fc.integer({ min: 1, max: 64 }),
      outF: fc.integer({ min: 1, max: 64 }),
      // From one row's scratch up to a few hundred rows' worth, odd byte counts included.
      rowsWorth: fc.integer({ min: 1, max: 300 }),
      spare: fc.integer({ min: 0, max: 1023 }),
    });
    fc.assert(
      fc.property(limits, ({ inF, outF, rowsWorth, spare }) => {
        const perRow = 8 * (inF + outF);
        const workspaceBytes = rowsWorth * perRow + (spare % perRow);
        const max = rowsPerCall(workspaceBytes, inF, outF);
        expect(max).toBe(rowsWorth);
        const ctx = NativeContext.open(lib, { workspaceBytes });
        try {
          ctx.uploadWeights(seededFloats(1, inF * outF), seededFloats(2, outF), outF, inF);
          expect(ctx.linearGelu(seededFloats(3, max * inF), max).length).toBe(max * outF);
          expect(thrownCode(() => ctx.linearGelu(seededFloats(3, (max + 1) * inF), max + 1))).toBe(
            'OMNI_ERR_NATIVE',
          );
          expect(ctx.stats().workspaceBytes).toBeLessThanOrEqual(workspaceBytes);
        } finally {
          ctx.close();
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
  });

  it('an output that is the input array itself gets the answer a separate one gets', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 48 }),
        fc.integer({ min: 1, max: 70 }),
        fc.integer({ min: 0, max: 2 ** 31 }),
        (width, rows, seed) => {
          const ctx = NativeContext.open(lib);
          try {
            ctx.uploadWeights(
              seededFloats(seed, width * width, 0.3),
              seededFloats(seed + 1, width),
              width,
              width,
            );
            const x = floatsWith(seed + 2, rows * width, 2, 0.02);
            const want = ctx.linearGelu(x, rows);
            expect(ctx.linearGelu(x, rows, x)).toBe(x);
            expect(x).toEqual(want);
          } finally {
            ctx.close();
          }
        },
      ),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
  });

  it('NativeContext: illegal calls are OMNI_ERR_INVALID_ARGUMENT, nothing written, the context unchanged', () => {
    const [IN, OUT, ROWS] = [6, 5, 4];
    const w = seededFloats(1, OUT * IN);
    const b = seededFloats(2, OUT);
    const x = seededFloats(3, ROWS * IN);
    const detached = (): Float32Array => {
      const d = new Float32Array(ROWS * IN);
      structuredClone(d.buffer, { transfer: [d.buffer] });
      return d;
    };
    const holes = (): unknown => {
      const a: number[] = Array.from(x);
      delete a[2];
      return a;
    };
    const bad = fc.constantFrom<[string, (ctx: NativeContext) => unknown]>(
      ...([
        ['x Float64Array', (c) => c.linearGelu(new Float64Array(ROWS * IN) as never, ROWS)],
        ['x Int32Array', (c) => c.linearGelu(new Int32Array(ROWS * IN) as never, ROWS)],
        [
          'x Uint8Array of the byte length',
          (c) => c.linearGelu(new Uint8Array(ROWS * IN * 4) as never, ROWS),
        ],
        ['x DataView', (c) => c.linearGelu(new DataView(new ArrayBuffer(ROWS * IN * 4)) as never, ROWS)],
        ['x plain array', (c) => c.linearGelu(Array.from(x) as never, ROWS)],
        ['x array with holes', (c) => c.linearGelu(holes() as never, ROWS)],
        ['x strings', (c) => c.linearGelu(Array.from(x, String) as never, ROWS)],
        ['x null', (c) => c.linearGelu(null as never, ROWS)],
        ['x detached', (c) => c.linearGelu(detached(), ROWS)],
        ['x one short', (c) => c.linearGelu(x.subarray(1), ROWS)],
        ['x one long', (c) => c.linearGelu(seededFloats(4, ROWS * IN + 1), ROWS)],
        ['x not a multiple of in', (c) => c.linearGelu(seededFloats(4, ROWS * IN + 2), ROWS)],
        ['rows 0', (c) => c.linearGelu(new Float32Array(0), 0)],
        ['rows -1', (c) => c.linearGelu(x, -1)],
        ['rows NaN', (c) => c.linearGelu(x, Number.NaN)],
        ['rows Infinity', (c) => c.linearGelu(x, Infinity)],
        ['rows 2^32 + ROWS', (c) => c.linearGelu(x, 2 ** 32 + ROWS)],
        ['rows MAX_ROWS + 1', (c) => c.linearGelu(x, MAX_ROWS + 1)],
        ['rows as bigint', (c) => c.linearGelu(x, BigInt(ROWS) as never)],
        ['out one short', (c) => c.linearGelu(x, ROWS, new Float32Array(ROWS * OUT - 1))],
        ['out Float64Array', (c) => c.linearGelu(x, ROWS, new Float64Array(ROWS * OUT) as never)],
        ['out detached', (c) => c.linearGelu(x, ROWS, detachedOut())],
        ['w one short', (c) => c.uploadWeights(w.subarray(1), b, OUT, IN)],
        ['w transposed shape', (c) => c.uploadWeights(w, b, IN, OUT)],
        ['w Float64Array', (c) => c.uploadWeights(Float64Array.from(w) as never, b, OUT, IN)],
        ['b one long', (c) => c.uploadWeights(w, seededFloats(2, OUT + 1), OUT, IN)],
        ['b detached', (c) => c.uploadWeights(w, detachedB(), OUT, IN)],
        ['features 0', (c) => c.uploadWeights(new Float32Array(0), b, OUT, 0)],
        ['features fractional', (c) => c.uploadWeights(w, b, OUT, IN + 0.5)],
      ] satisfies Array<[string, (ctx: NativeContext) => unknown]>),
    );
    function detachedOut(): Float32Array {
      const d = new Float32Array(ROWS * OUT);
      structuredClone(d.buffer, { transfer: [d.buffer] });
      return d;
    }
    function detachedB(): Float32Array {
      const d = new Float32Array(OUT);
      structuredClone(d.buffer, { transfer: [d.buffer] });
      return d;
    }
    const ctx = NativeContext.open(lib);
    try {
      ctx.uploadWeights(w, b, OUT, IN);
      const expected = ctx.linearGelu(x, ROWS);
      const before = ctx.stats();
      fc.assert(
        fc.property(fc.array(bad, { minLength: 1, maxLength: 6 }), (cases) => {
          for (const [what, call] of cases) {
            expect({ what, code: thrownCode(() => call(ctx)) }).toEqual({
              what,
              code: 'OMNI_ERR_INVALID_ARGUMENT',
            });
          }
          expect(ctx.linearGelu(x, ROWS)).toEqual(expected);
          const now = ctx.stats();
          expect(now.liveBytes).toBe(before.liveBytes);
          expect(now.cachedWorkspaces).toBe(before.cachedWorkspaces);
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );
    } finally {
      ctx.close();
    }
  });
});

describe('native context sequences (fixture)', () => {
  let lib: NativeLibrary;
  let faults: FixtureFaults;
  beforeAll(() => {
    buildFixture();
    lib = loadNativeLibrary('fixture');
    faults = new FixtureFaults(lib);
  });

  it('uploads, calls and injected faults in any order: exact answers, cache within bounds, nothing leaked', () => {
    const SHAPES: Array<[number, number]> = [
      [3, 5],
      [17, 2],
      [40, 33],
    ];
    const op = fc.oneof(
      fc.record({ kind: fc.constant('upload' as const), shape: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ kind: fc.constant('call' as const), rows: fc.integer({ min: 1, max: 90 }) }),
      fc.record({
        kind: fc.constantFrom('alloc' as const, 'copy' as const),
        rows: fc.integer({ min: 1, max: 90 }),
        nth: fc.integer({ min: 1, max: 4 }),
      }),
    );
    const setup = fc.record({
      workspaceCount: fc.integer({ min: 1, max: 5 }),
      workspaceBytes: fc.integer({ min: 200, max: 60_000 }),
      ops: fc.array(op, { minLength: 1, maxLength: 25 }),
      seed: fc.integer({ min: 0, max: 2 ** 31 }),
    });
    const fresh = new Map<string, NativeContext>();
    // The reference contexts grow their own caches as they go: left out of the live-byte count.
    const freshBytes = (): number => [...fresh.values()].reduce((sum, c) => sum + c.stats().liveBytes, 0);
    const answer = (shape: number, x: Float32Array, rows: number): Float32Array => {
      const [inF, outF] = SHAPES[shape]!;
      let ctx = fresh.get(`${shape}`);
      if (ctx === undefined) {
        ctx = NativeContext.open(lib);
        ctx.uploadWeights(
          seededFloats(shape + 100, inF * outF, 0.4),
          seededFloats(shape + 200, outF),
          outF,
          inF,
        );
        fresh.set(`${shape}`, ctx);
      }
      return ctx.linearGelu(x, rows);
    };
    try {
      answer(0, seededFloats(1, SHAPES[0]![0]), 1); // opened outside the baseline below
      answer(1, seededFloats(1, SHAPES[1]![0]), 1);
      answer(2, seededFloats(1, SHAPES[2]![0]), 1);
      fc.assert(
        fc.property(setup, (s) => {
          const baseline = faults.liveBytes() - freshBytes();
          const ctx = NativeContext.open(lib, {
            workspaceCount: s.workspaceCount,
            workspaceBytes: s.workspaceBytes,
          });
          let shape = -1;
          let n = 0;
          try {
            for (const o of s.ops) {
              if (o.kind === 'upload') {
                const [inF, outF] = SHAPES[o.shape]!;
                ctx.uploadWeights(
                  seededFloats(o.shape + 100, inF * outF, 0.4),
                  seededFloats(o.shape + 200, outF),
                  outF,
                  inF,
                );
                shape = o.shape;
                continue;
              }
              if (shape < 0) {
                expect(thrownCode(() => ctx.linearGelu(seededFloats(1, 1), 1))).toBe('OMNI_ERR_NATIVE');
                continue;
              }
              const [inF, outF] = SHAPES[shape]!;
              const x = seededFloats(s.seed + n++, o.rows * inF, 3);
              if (o.kind === 'alloc') faults.failAllocAfter(o.nth);
              if (o.kind === 'copy') faults.failCopyAfter(ctx, o.nth);
              let got: Float32Array | undefined;
              let err: { code?: string; nativeCode?: number; fatal?: boolean } | undefined;
              try {
                got = ctx.linearGelu(x, o.rows);
              } catch (e) {
                err = e as typeof err;
              }
              faults.failAllocAfter(0);
              faults.failCopyAfter(ctx, 0);
              const limit = 8 * o.rows * (inF + outF) > s.workspaceBytes;
              if (limit) {
                expect(err).toMatchObject({
                  code: 'OMNI_ERR_NATIVE',
                  nativeCode: NativeStatus.WORKSPACE_LIMIT,
                });
              } else if (err !== undefined) {
                // Only an armed fault may fail a call that fits.
                const want = o.kind === 'alloc' ? NativeStatus.OUT_OF_MEMORY : NativeStatus.COPY_FAILED;
                expect(o.kind).not.toBe('call');
                expect(err).toMatchObject({ code: 'OMNI_ERR_NATIVE', nativeCode: want, fatal: false });
              } else {
                expect(o.kind === 'copy' && o.nth <= 2).toBe(false);
                expect(got).toEqual(answer(shape, x, o.rows));
              }
              const stats = ctx.stats();
              expect(stats.cachedWorkspaces).toBeLessThanOrEqual(s.workspaceCount);
              expect(stats.workspaceBytes).toBeLessThanOrEqual(s.workspaceBytes);
            }
          } finally {
            faults.failAllocAfter(0);
            ctx.close();
          }
          expect(faults.liveBytes() - freshBytes()).toBe(baseline);
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );
    } finally {
      for (const ctx of fresh.values()) ctx.close();
    }
  });
});

describe('LinearRuntime fuzz (fixture)', () => {
  let faults: FixtureFaults;
  const runtimes: LinearRuntime[] = [];
  beforeAll(() => {
    buildFixture();
    faults = new FixtureFaults(loadNativeLibrary('fixture'));
  });
  afterAll(async () => {
    await Promise.all(runtimes.map((lr) => lr.close({ timeoutMs: 10_000 })));
  });

  it('malformed weights or shapes at start: OMNI_ERR_INVALID_ARGUMENT before any thread starts', async () => {
    type WeightFlaw =
      | 'w-short'
      | 'w-long'
      | 'b-short'
      | 'b-long'
      | 'w-f64'
      | 'b-f64'
      | 'w-array'
      | 'b-array'
      | 'w-detached'
      | 'b-detached'
      | 'in-other'
      | 'in-fraction'
      | 'in-zero'
      | 'in-huge'
      | 'said-disagrees';
    const spawn = vi.spyOn(Runtime, 'start');
    const flawed = fc.record({
      inF: fc.integer({ min: 1, max: 8 }),
      outF: fc.integer({ min: 1, max: 8 }),
      // One flaw at a time (two could cancel out: a wider stated width and a longer w), on weights
      // that are otherwise right (a shared view with an offset included).
      flaws: fc.tuple(
        fc.constantFrom<WeightFlaw>(
          'w-short',
          'w-long',
          'b-short',
          'b-long',
          'w-f64',
          'b-f64',
          'w-array',
          'b-array',
          'w-detached',
          'b-detached',
          'in-other',
          'in-fraction',
          'in-zero',
          'in-huge',
          'said-disagrees',
        ),
      ),
      shared: fc.boolean(),
    });
    const make = (which: 'w' | 'b', length: number, flaws: WeightFlaw[], shared: boolean): unknown => {
      const n =
        length + (flaws.includes(`${which}-short`) ? -1 : 0) + (flaws.includes(`${which}-long`) ? 1 : 0);
      const values = place(seededFloats(n + 7, n), shared ? 'shared-offset' : 'plain', 3);
      if (flaws.includes(`${which}-f64`)) return Float64Array.from(values);
      if (flaws.includes(`${which}-array`)) return Array.from(values);
      if (flaws.includes(`${which}-detached`)) {
        const own = values.slice();
        structuredClone(own.buffer, { transfer: [own.buffer as ArrayBuffer] });
        return own;
      }
      return values;
    };
    try {
      await fc.assert(
        fc.asyncProperty(flawed, async ({ inF, outF, flaws, shared }) => {
          const has = (flaw: WeightFlaw): boolean => flaws.includes(flaw);
          const inFeatures = has('in-zero')
            ? 0
            : has('in-huge')
              ? MAX_FEATURES + 1
              : has('in-fraction')
                ? inF + 0.5
                : has('in-other')
                  ? inF + 1
                  : inF;
          const weights = {
            w: make('w', inF * outF, flaws, shared),
            b: make('b', outF, flaws, shared),
            inFeatures,
            outFeatures: outF,
          } as unknown as LinearWeights;
          let code: string | undefined;
          try {
            await LinearRuntime.start({
              backend: 'fixture',
              threads: 1,
              weights,
              ...(has('said-disagrees') ? { outFeatures: outF + 1 } : {}),
            });
            code = 'started';
          } catch (err) {
            code = (err as { code?: string }).code;
          }
          expect({ flaws, code }).toEqual({ flaws, code: 'OMNI_ERR_INVALID_ARGUMENT' });
          expect(spawn).not.toHaveBeenCalled();
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );
    } finally {
      spawn.mockRestore();
    }
  });

  type Flaw =
    | 'none'
    | 'extra'
    | 'rows-mismatch'
    | 'float64'
    | 'array'
    | 'detached'
    | 'abort-before'
    | 'abort-after'
    | 'deadline'
    | 'transfer'
    | 'transfer-then-detach'
    | 'transfer-twice'
    | 'inject-copy'
    | 'inject-alloc';
  const FLAWS: Flaw[] = [
    'none',
    'none',
    'none',
    'none',
    'extra',
    'rows-mismatch',
    'float64',
    'array',
    'detached',
    'abort-before',
    'abort-after',
    'deadline',
    'transfer',
    'transfer-then-detach',
    'transfer-twice',
    'inject-copy',
    'inject-alloc',
  ];
  const [IN, OUT, MAX] = [24, 10, 150];

  /** The codes a call with this flaw may end with ('ok': it resolved). */
  function allowed(flaw: Flaw, tooLarge: boolean, waits: boolean, armed: boolean): string[] {
    const busy = waits ? [] : ['OMNI_ERR_REJECTED'];
    // An injection arms a fault in whichever thread takes it, for some later call there.
    if (flaw === 'inject-copy' || flaw === 'inject-alloc') return ['ok', ...busy];
    const native = armed ? ['OMNI_ERR_NATIVE'] : [];
    // Too many rows is found with the shape, before the signal (as Runtime.run checks options first).
    if (tooLarge && !['extra', 'rows-mismatch', 'float64', 'array', 'detached'].includes(flaw)) {
      return ['OMNI_ERR_TOO_LARGE'];
    }
    switch (flaw) {
      case 'none':
      case 'transfer':
        return ['ok', ...busy, ...native];
      case 'abort-before':
        return ['OMNI_ERR_ABORTED'];
      case 'abort-after':
        return ['ok', 'OMNI_ERR_ABORTED', ...busy, ...native];
      case 'deadline':
        return ['ok', 'OMNI_ERR_DEADLINE', ...busy, ...native];
      // Detached before a thread took it (its call queued): refused at the post.
      case 'transfer-then-detach':
      case 'transfer-twice':
        return ['ok', 'OMNI_ERR_INVALID_ARGUMENT', ...busy, ...native];
      default:
        return ['OMNI_ERR_INVALID_ARGUMENT'];
    }
  }

  it.each([
    ['the serial scheduler, 1 thread', 1, undefined],
    ['a refusing bound, 2 threads', 2, { requests: 4, units: 200 }],
    ['a waiting bound, 2 threads', 2, { requests: 3, units: 160, wait: true }],
  ])(
    '%s: random calls, some illegal, aborted or with deadlines: right answers or coded errors, nothing leaked',
    async (what, threads, admission) => {
      const baseline = faults.liveBytes();
      const weights = seededWeights(IN, OUT, 9);
      const lr = await LinearRuntime.start({
        backend: 'fixture',
        threads,
        weights,
        faultInjection: true,
        workspaceBytes: 2 * (IN + OUT) * 4 * MAX,
        ...(admission === undefined ? {} : { admission }),
      });
      runtimes.push(lr);
      expect(lr.maxRows).toBe(MAX);
      const waits = admission === undefined || ('wait' in admission && admission.wait);
      const direct = NativeContext.open(loadNativeLibrary('fixture'));
      direct.uploadWeights(weights.w, weights.b, OUT, IN);
      const call = fc.record({
        rows: fc.oneof(fc.integer({ min: 1, max: 20 }), fc.integer({ min: MAX - 10, max: MAX + 10 })),
        seed: fc.integer({ min: 0, max: 2 ** 31 }),
        rate: fc.constantFrom(0, 0.05),
        at: placement,
        flaw: fc.constantFrom(...FLAWS),
      });
      const outcomes = new Map<string, number>();
      let armed = false;
      await fc.assert(
        fc.asyncProperty(fc.array(call, { minLength: 1, maxLength: 8 }), async (calls) => {
          const results = await Promise.all(
            calls.map(async (c) => {
              const values = floatsWith(c.seed, c.rows * IN, 2, c.rate);
              const moves = c.flaw.startsWith('transfer');
              // A shared buffer cannot be transferred: those calls use a plain one.
              const x = place(values, moves && c.at.startsWith('shared') ? 'plain' : c.at, 2);
              const ac = new AbortController();
              const started: Array<Promise<Float32Array | null>> = [];
              switch (c.flaw) {
                case 'extra':
                  started.push(lr.run(place(floatsWith(c.seed, c.rows * IN + 1, 2, 0), c.at, 2)));
                  break;
                case 'rows-mismatch':
                  started.push(lr.run(x, { rows: c.rows + 1 }));
                  break;
                case 'float64':
                  started.push(lr.run(Float64Array.from(values) as never));
                  break;
                case 'array':
                  started.push(lr.run(Array.from(values) as never));
                  break;
                case 'detached': {
                  const d = new Float32Array(values);
                  structuredClone(d.buffer, { transfer: [d.buffer] });
                  started.push(lr.run(d, { rows: c.rows }));
                  break;
                }
                case 'abort-before':
                  ac.abort();
                  started.push(lr.run(x, { signal: ac.signal }));
                  break;
                case 'abort-after':
                  started.push(lr.run(x, { signal: ac.signal }));
                  ac.abort();
                  break;
                case 'deadline':
                  started.push(lr.run(x, { deadlineMs: 1 }));
                  break;
                case 'transfer':
                  started.push(lr.run(x, { transfer: [x.buffer as ArrayBuffer] }));
                  break;
                case 'transfer-then-detach':
                  started.push(lr.run(x, { transfer: [x.buffer as ArrayBuffer] }));
                  // Moved elsewhere before a thread took it (unless one already has).
                  if (x.byteLength > 0) structuredClone(x.buffer, { transfer: [x.buffer as ArrayBuffer] });
                  break;
                case 'transfer-twice':
                  started.push(lr.run(x, { transfer: [x.buffer as ArrayBuffer] }));
                  started.push(lr.run(x, { transfer: [x.buffer as ArrayBuffer] }));
                  break;
                case 'inject-copy':
                case 'inject-alloc':
                  armed = true;
                  started.push(
                    lr.runtime.run({
                      inject: c.flaw === 'inject-copy' ? 'copy' : 'alloc',
                      after: 1 + (c.seed % 4),
                    }),
                  );
                  break;
                default:
                  started.push(lr.run(x));
              }
              return Promise.all(
                started.map(async (p) => {
                  try {
                    return { c, values, y: await p, code: 'ok', err: undefined };
                  } catch (e) {
                    const err = e as { code?: string; nativeCode?: number; fatal?: boolean };
                    return { c, values, y: undefined, code: err.code ?? 'uncoded', err };
                  }
                }),
              );
            }),
          );
          for (const { c, values, y, code, err } of results.flat()) {
            const key = `${c.flaw}:${code}`;
            outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
            expect(allowed(c.flaw, c.rows > MAX, waits, armed), `${c.flaw} rows ${c.rows}`).toContain(code);
            if (code === 'OMNI_ERR_NATIVE') {
              expect(err).toMatchObject({ fatal: false });
              expect([NativeStatus.OUT_OF_MEMORY, NativeStatus.COPY_FAILED]).toContain(err?.nativeCode);
            }
            if (y instanceof Float32Array) {
              expect(y.length).toBe(c.rows * OUT);
              expect(firstMismatch(y, values, weights.w, weights.b, c.rows, OUT, IN)).toBe(-1);
              // Bit for bit the direct call's answer: nothing from the thread's earlier calls in it.
              expect(y).toEqual(direct.linearGelu(values, c.rows));
            }
          }
        }),
        { seed: SEED, numRuns: Math.ceil(RUNS / 3), endOnFailure: true },
      );
      // Every kind of call was made, and some were served: a generator that stopped making one
      // would otherwise pass on what is left.
      if (RUNS >= 100) {
        const made = new Set([...outcomes.keys()].map((key) => key.slice(0, key.indexOf(':'))));
        expect([...made].sort(), what).toEqual([...new Set(FLAWS)].sort());
        expect(outcomes.get('none:ok') ?? 0, what).toBeGreaterThan(0);
      }
      expect(lr.report()).toMatchObject({ state: 'ready' });
      const stats = await lr.stats();
      expect(stats.cachedWorkspaces).toBeLessThanOrEqual(4);
      await lr.close();
      direct.close();
      runtimes.length = 0;
      // Every thread survived to run its close hook: the fixture holds what it held before.
      expect(lr.report()).toMatchObject({ depth: 0, units: 0, leaked: 0 });
      expect(faults.liveBytes()).toBe(baseline);
    },
  );
});
