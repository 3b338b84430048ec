/**
 * Randomized inputs to the native linear layer straight through NativeContext. Legal inputs
 * must give the float64 reference's answer (NaN and infinities where IEEE puts them); illegal
 * ones a coded error before any native work; either way the context keeps serving and the
 * fixture's live bytes come back to where they were. A fixed seed and run count (printed;
 * NATIVE_FUZZ_SEED, NATIVE_FUZZ_RUNS) make a failure reproducible. Random sequences on contexts
 * are in test/native-context-sequences.test.ts, the same through LinearRuntime in
 * test/native-runtime-fuzz.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rowsPerCall } from '../src/linear/start-options.js';
import { MAX_FEATURES, MAX_ROWS, NativeContext, seededFloats } from '../src/native/index.js';
import { fixtureLibrary } from './fixtures/native-fixture-library.js';
import {
  firstMismatch,
  floatsWith,
  place,
  placement,
  RUNS,
  SEED,
  untouchedAround,
} from './fixtures/native-fuzz-inputs.js';
import { thrownCode } from './fixtures/thrown.js';

describe(`native fuzz (fixture; seed ${SEED}, ${RUNS} runs; NATIVE_FUZZ_SEED, NATIVE_FUZZ_RUNS)`, () => {
  const fixture = fixtureLibrary();

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
        const baseline = fixture.faults.liveBytes();
        const w = floatsWith(s.seed + 1, s.outF * s.inF, 1 / Math.sqrt(s.inF), s.rate / 4);
        const b = floatsWith(s.seed + 2, s.outF, 0.5, s.rate / 4);
        const x = place(floatsWith(s.seed + 3, s.rows * s.inF, 2, s.rate), s.xAt, 3);
        const xSmall = floatsWith(s.seed + 4, s.small * s.inF, 2, s.rate);
        const ctx = NativeContext.open(fixture.lib, { workspaceCount: s.workspaceCount });
        const fresh = NativeContext.open(fixture.lib);
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
        expect(fixture.faults.liveBytes()).toBe(baseline);
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
        const ctx = NativeContext.open(fixture.lib);
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
        const ctx = NativeContext.open(fixture.lib, { workspaceBytes });
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
          const ctx = NativeContext.open(fixture.lib);
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
    const ctx = NativeContext.open(fixture.lib);
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
