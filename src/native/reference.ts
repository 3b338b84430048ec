/**
 * A plain TypeScript linear + GELU in double precision: the oracle the native backends are tested
 * against and the "plain loop" row of the benchmark. JavaScript has no Math.erf, hence erf() below.
 */

const TWO_OVER_SQRT_PI = 1.1283791670955126;

/**
 * erf to about 1e-15 absolute, from the everywhere-convergent series
 * erf(x) = 2/sqrt(pi) * exp(-x^2) * sum_n 2^n x^(2n+1) / (1*3*...*(2n+1)),
 * whose terms are all positive (no cancellation); beyond |x| = 6, erf is 1 in double precision.
 */
export function erf(x: number): number {
  if (Number.isNaN(x)) return Number.NaN;
  const a = Math.abs(x);
  if (a >= 6) return Math.sign(x);
  const x2 = a * a;
  let term = a;
  let sum = a;
  for (let n = 1; n < 200; n++) {
    term *= (2 * x2) / (2 * n + 1);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return Math.sign(x) * TWO_OVER_SQRT_PI * Math.exp(-x2) * sum;
}

/**
 * The exact-erf GELU both backends implement. At -Infinity the formula is -Infinity * 0 = NaN;
 * GELU's limit there is 0, from below: -0, as the formula gives for any finite v far enough down.
 */
export function gelu(v: number): number {
  if (v === Number.NEGATIVE_INFINITY) return -0;
  return 0.5 * v * (1 + erf(v / Math.SQRT2));
}

/** y = GELU(x W^T + b) accumulated in double; x rows x in, W out x in, both row-major. */
export function referenceLinearGelu(
  x: ArrayLike<number>,
  rows: number,
  w: ArrayLike<number>,
  b: ArrayLike<number>,
  outFeatures: number,
  inFeatures: number,
): Float64Array {
  const y = new Float64Array(rows * outFeatures);
  for (let r = 0; r < rows; r++) {
    for (let o = 0; o < outFeatures; o++) {
      let sum = 0;
      for (let k = 0; k < inFeatures; k++) sum += x[r * inFeatures + k]! * w[o * inFeatures + k]!;
      y[r * outFeatures + o] = gelu(sum + b[o]!);
    }
  }
  return y;
}

/** Deterministic uniform floats in [-scale, scale) (mulberry32), for tests, benches and gpu-check. */
export function seededFloats(seed: number, length: number, scale = 1): Float32Array {
  let state = seed >>> 0;
  const out = new Float32Array(length);
  for (let i = 0; i < length; i++) {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    out[i] = ((((t ^ (t >>> 14)) >>> 0) / 4294967296) * 2 - 1) * scale;
  }
  return out;
}
