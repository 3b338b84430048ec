/**
 * The layer's weights: seeded ones, the caller's checked, and the copy the threads are given.
 *
 * Throws: InvalidArgumentError for a malformed shape, seed or weights.
 */
import { describeValue, InvalidArgumentError } from '../errors.js';
import { MAX_FEATURES, seededFloats } from '../native/index.js';
import { requireFloat32Array, requireInteger, requireLength } from '../native/validate.js';
import type { LinearWeights } from './protocol.js';

/**
 * Seeded weights, scaled so outputs stay in GELU's interesting range. The shape (1..MAX_FEATURES
 * each) and the seed (0..2^32-1) are checked before anything is allocated.
 */
export function seededWeights(inFeatures: number, outFeatures: number, seed = 1): LinearWeights {
  checkFeatures('inFeatures', inFeatures);
  checkFeatures('outFeatures', outFeatures);
  requireInteger('seed', seed, 0, 2 ** 32 - 1);
  const scale = 1 / Math.sqrt(inFeatures);
  return {
    w: seededFloats(seed, inFeatures * outFeatures, scale),
    b: seededFloats(seed + 1, outFeatures, 0.1),
    inFeatures,
    outFeatures,
  };
}

/** A width the options gave, for the disagreement's message: a template literal threw on a Symbol. */
function describeWant(want: unknown): string {
  return want === undefined ? 'not given' : describeValue(want);
}

/**
 * Checked once at start: a wrong shape is one coded error from start(), not a failure in every
 * thread. A shape also given in the options must agree: the weights would silently win, and rows
 * would then be cut at a width the caller did not ask for.
 */
export function checkWeights(
  weights: LinearWeights,
  wantIn: number | undefined,
  wantOut: number | undefined,
): LinearWeights {
  if (typeof weights !== 'object' || weights === null) {
    throw new InvalidArgumentError(
      `weights must be { w, b, inFeatures, outFeatures }, got ${describeValue(weights)}`,
    );
  }
  const inFeatures = checkFeatures('weights.inFeatures', weights.inFeatures);
  const outFeatures = checkFeatures('weights.outFeatures', weights.outFeatures);
  if ((wantIn !== undefined && wantIn !== inFeatures) || (wantOut !== undefined && wantOut !== outFeatures)) {
    throw new InvalidArgumentError(
      `inFeatures/outFeatures (${describeWant(wantIn)} -> ${describeWant(wantOut)}) disagree with the weights' ${inFeatures} -> ${outFeatures}`,
    );
  }
  const w = requireFloat32Array('weights.w', weights.w);
  const b = requireFloat32Array('weights.b', weights.b);
  requireLength('weights.w', w, inFeatures * outFeatures);
  requireLength('weights.b', b, outFeatures);
  // The values checked, as a plain object: a class's getters read again could answer
  // differently from what was checked.
  return { w, b, inFeatures, outFeatures };
}

/**
 * The threads' weights, copied once at start into one SharedArrayBuffer. piscina clones
 * workerData again for every thread it starts, a replacement for a lost one included: the
 * caller's own arrays, reused or detached (transferred) since, would reach it as they are then
 * (a detached one fails that clone, uncaught, in the main thread). Shared, every thread's clone
 * is this one copy, not a copy each holds for as long as it lives.
 */
export function sharedCopy({ w, b, inFeatures, outFeatures }: LinearWeights): LinearWeights {
  const wLength = inFeatures * outFeatures;
  const memory = new SharedArrayBuffer((wLength + outFeatures) * Float32Array.BYTES_PER_ELEMENT);
  const sharedW = new Float32Array(memory, 0, wLength);
  const sharedB = new Float32Array(memory, wLength * Float32Array.BYTES_PER_ELEMENT, outFeatures);
  sharedW.set(w);
  sharedB.set(b);
  return { w: sharedW, b: sharedB, inFeatures, outFeatures };
}

export function checkFeatures(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1 || value > MAX_FEATURES) {
    throw new InvalidArgumentError(
      `${name} must be an integer from 1 to ${MAX_FEATURES}, got ${describeValue(value)}`,
    );
  }
  return value;
}
