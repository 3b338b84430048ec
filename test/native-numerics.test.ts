import { afterAll, describe, expect, it } from 'vitest';
import { erf, gelu, NativeContext, referenceLinearGelu, seededFloats } from '../src/native/index.js';
import { fixtureLibrary } from './fixtures/native-fixture-library.js';
import { maxViolation } from './fixtures/native-tolerance.js';

// Tolerance: see test/fixtures/native-tolerance.ts.

// [rows, inFeatures, outFeatures]: tails of every block size (MR 4, NR 16, KC 256, MC 64) included.
const SHAPES: Array<[number, number, number]> = [
  [1, 1, 1],
  [3, 5, 7],
  [4, 16, 16],
  [5, 17, 33],
  [65, 300, 17],
  [7, 513, 40],
  [130, 64, 100],
];

describe('native numerics (fixture)', () => {
  const fixture = fixtureLibrary();
  const open: NativeContext[] = [];
  afterAll(() => {
    for (const ctx of open) ctx.close();
  });

  it('erf matches known values', () => {
    expect(erf(0)).toBe(0);
    expect(erf(0.5)).toBeCloseTo(0.5204998778130465, 14);
    expect(erf(1)).toBeCloseTo(0.8427007929497149, 14);
    expect(erf(-2)).toBeCloseTo(-0.9953222650189527, 14);
    expect(erf(3.5)).toBeCloseTo(0.9999992569016276, 14);
    expect(erf(10)).toBe(1);
  });

  // Near 6 the series needs its most terms (they peak near n = x^2) before it converges.
  it('erf matches known values from 4 up to 6, and is exactly 1 from 6 on, never above', () => {
    expect(erf(4)).toBeCloseTo(0.9999999845827421, 14);
    expect(erf(4.5)).toBeCloseTo(0.9999999998033839, 14);
    expect(erf(5)).toBeCloseTo(0.9999999999984626, 14);
    expect(erf(-5)).toBeCloseTo(-0.9999999999984626, 14);
    expect(erf(5.5)).toBeCloseTo(0.9999999999999927, 14);
    expect(erf(5.9)).toBeCloseTo(0.9999999999999999, 14);
    expect(erf(6)).toBe(1);
    expect(erf(-6)).toBe(-1);
  });

  it('seededFloats: one stream per seed, another for another seed, in [-scale, scale)', () => {
    expect(seededFloats(7, 64, 3)).toEqual(seededFloats(7, 64, 3));
    expect(seededFloats(8, 64, 3)).not.toEqual(seededFloats(7, 64, 3));
    const values = [...seededFloats(9, 4096, 1000)];
    expect(values.every((v) => v >= -1000 && v < 1000)).toBe(true);
    // Spread over the whole range, not [-1, 1) scaled by nothing.
    expect(Math.min(...values)).toBeLessThan(-900);
    expect(Math.max(...values)).toBeGreaterThan(900);
  });

  it.each(SHAPES)(
    'rows %i, in %i, out %i: blocked kernel and C naive reference match TS',
    (rows, inF, outF) => {
      const seed = rows * 7919 + inF * 31 + outF;
      const x = seededFloats(seed, rows * inF, 2);
      const w = seededFloats(seed + 1, outF * inF, 1 / Math.sqrt(inF));
      const b = seededFloats(seed + 2, outF, 0.5);
      const ctx = NativeContext.open(fixture.lib);
      open.push(ctx);
      ctx.uploadWeights(w, b, outF, inF);
      const y = ctx.linearGelu(x, rows);
      expect(y).toBeInstanceOf(Float32Array);
      expect(y.length).toBe(rows * outF);
      expect(maxViolation(y, x, w, b, rows, outF, inF)).toBeLessThanOrEqual(1);
      const naive = fixture.faults.referenceLinearGelu(x, rows, w, b, outF, inF);
      expect(maxViolation(naive, x, w, b, rows, outF, inF)).toBeLessThanOrEqual(1);
    },
  );

  it('large pre-activations saturate like GELU (v for large v, -0 for very negative v)', () => {
    const ctx = NativeContext.open(fixture.lib);
    open.push(ctx);
    ctx.uploadWeights(new Float32Array([1, -1]), new Float32Array([0, 0]), 2, 1);
    const y = ctx.linearGelu(new Float32Array([12, -0.5]), 2);
    expect(Array.from(y)).toEqual([
      12,
      expect.closeTo(0, 12),
      expect.closeTo(-0.15426877, 6),
      expect.closeTo(0.34573123, 6),
    ]);
  });

  it('the TS reference GELU has its limits at the ends: -0 below, v above, NaN stays NaN', () => {
    expect(Object.is(gelu(Number.NEGATIVE_INFINITY), -0)).toBe(true);
    expect(Object.is(gelu(-1e308), -0)).toBe(true);
    expect(gelu(Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY);
    expect(gelu(1e308)).toBe(1e308);
    expect(gelu(Number.NaN)).toBeNaN();
    const y = referenceLinearGelu([Number.NEGATIVE_INFINITY, -1e308, -1e308], 2, [1], [0], 1, 1);
    expect(Object.is(y[0], -0)).toBe(true);
    // Overflow in the dot product itself: -1e308 + -1e308 is -Infinity.
    const sum = referenceLinearGelu([-1e308, -1e308], 1, [1, 1], [0], 1, 2);
    expect(Object.is(sum[0], -0)).toBe(true);
  });

  // Pre-activations: -inf, +inf, NaN, a sum of finite terms that overflows each way, and large
  // finite values; 7 rows, so both the 4-row tile and the 1-row tail see them.
  const EXTREME_X = new Float32Array([
    ...[Number.NEGATIVE_INFINITY, 0],
    ...[Number.POSITIVE_INFINITY, 0],
    ...[Number.NaN, 0],
    ...[-3e38, -3e38],
    ...[3e38, 3e38],
    ...[-1e30, 0],
    ...[1e30, 0],
  ]);
  const EXTREME_Y = [-0, Infinity, Number.NaN, -0, Infinity, -0, Math.fround(1e30)];

  it('infinite pre-activations give GELU limits, not NaN: -0 below, +Infinity above', () => {
    const ctx = NativeContext.open(fixture.lib);
    open.push(ctx);
    const w = new Float32Array([1, 1]);
    const b = new Float32Array([0]);
    ctx.uploadWeights(w, b, 1, 2);
    const blocked = Array.from(ctx.linearGelu(EXTREME_X, 7));
    const naive = Array.from(fixture.faults.referenceLinearGelu(EXTREME_X, 7, w, b, 1, 2));
    const reference = Array.from(referenceLinearGelu(EXTREME_X, 7, w, b, 1, 2));
    // toStrictEqual tells -0 from 0 (Object.is) and takes NaN as equal to NaN.
    expect(blocked).toStrictEqual(EXTREME_Y);
    expect(naive).toStrictEqual(EXTREME_Y);
    // The TS reference sums in double, where 3e38 + 3e38 does not overflow.
    expect(reference).toStrictEqual(EXTREME_Y.with(4, 2 * Math.fround(3e38)));
  });

  it('adds the bias after the dot product, as the CUDA kernel does: the same sums overflow', () => {
    // Rows of 1 x 2 inputs against w = [1, 1] and bias 3e38: started from the bias, 3e38 + 3e38
    // overflows before -3e38 comes in; added last, the dot product is 0 and the result 3e38. And the
    // other way round with bias -3e38: the dot product alone overflows.
    const ctx = NativeContext.open(fixture.lib);
    open.push(ctx);
    const w = new Float32Array([1, 1]);
    const x = new Float32Array([3e38, -3e38, 3e38, 3e38, 1, 2, 3, 4, 5, 6]);
    const rows = x.length / 2;
    for (const bias of [3e38, -3e38]) {
      const b = new Float32Array([bias]);
      ctx.uploadWeights(w, b, 1, 2);
      const blocked = Array.from(ctx.linearGelu(x, rows));
      const naive = Array.from(fixture.faults.referenceLinearGelu(x, rows, w, b, 1, 2));
      expect(blocked).toStrictEqual(naive);
      expect(blocked[0]).toBe(Math.fround(bias) > 0 ? Math.fround(3e38) : -0);
      expect(blocked[1]).toBe(Infinity);
    }
  });

  it('reads and writes SharedArrayBuffer views in place, at their offsets', () => {
    const [rows, inF, outF] = [6, 20, 9];
    const w = seededFloats(11, outF * inF, 0.3);
    const b = seededFloats(12, outF, 0.1);
    const xs = new Float32Array(new SharedArrayBuffer(4 * (rows * inF + 3)));
    xs.set(seededFloats(13, rows * inF), 3);
    const x = xs.subarray(3);
    const ys = new Float32Array(new SharedArrayBuffer(4 * (rows * outF + 5))).fill(-7);
    const out = ys.subarray(2, 2 + rows * outF);
    const ctx = NativeContext.open(fixture.lib);
    open.push(ctx);
    ctx.uploadWeights(w, b, outF, inF);
    expect(ctx.linearGelu(x, rows, out)).toBe(out);
    expect(maxViolation(out, x, w, b, rows, outF, inF)).toBeLessThanOrEqual(1);
    expect([ys[0], ys[1], ys[ys.length - 3], ys[ys.length - 1]]).toEqual([-7, -7, -7, -7]);
  });

  it('repeated calls on a cached workspace are bit-identical (no residue)', () => {
    const [rows, inF, outF] = [33, 70, 50];
    const ctx = NativeContext.open(fixture.lib);
    open.push(ctx);
    ctx.uploadWeights(seededFloats(21, outF * inF), seededFloats(22, outF), outF, inF);
    const x1 = seededFloats(23, rows * inF);
    const first = ctx.linearGelu(x1, rows);
    ctx.linearGelu(seededFloats(24, rows * inF, 50), rows);
    expect(ctx.linearGelu(x1, rows)).toEqual(first);
    expect(ctx.stats().cachedWorkspaces).toBe(1);
  });
});
