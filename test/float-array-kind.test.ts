/**
 * A view that is no Float32Array, named in its error by its own type ("got Float64Array"): read
 * from its internal slot, never through the view's own properties. Object.prototype.toString read
 * its own Symbol.toStringTag, so the caller's getter ran, and its throw came out of
 * LinearRuntime.run (and start's weights) uncoded instead of OMNI_ERR_INVALID_ARGUMENT.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LinearRuntime } from '../src/index.js';
import { rejection } from './fixtures/thrown.js';

let reads = 0;

/** A view whose own Symbol.toStringTag getter counts its reads and throws. */
function hostileView(view: ArrayBufferView): Float32Array {
  return Object.defineProperty(view, Symbol.toStringTag, {
    get(): never {
      reads++;
      throw new Error('a getter of the caller');
    },
  }) as unknown as Float32Array;
}

const views: Array<[string, () => Float32Array]> = [
  ['a Float64Array', () => hostileView(new Float64Array(4))],
  ['a DataView', () => hostileView(new DataView(new ArrayBuffer(16)))],
];

describe('a view of another type, whose own Symbol.toStringTag throws', () => {
  let linear: LinearRuntime;
  beforeAll(async () => {
    linear = await LinearRuntime.start({ backend: 'fixture', inFeatures: 2, outFeatures: 2, threads: 1 });
  });
  afterAll(async () => {
    await linear.close();
  });

  it.each(views)('%s as run(x): OMNI_ERR_INVALID_ARGUMENT, the getter never read', async (_, make) => {
    reads = 0;
    expect((await rejection(linear.run(make()))).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
    expect(reads).toBe(0);
  });

  it.each(views)(
    '%s as start weights.w: OMNI_ERR_INVALID_ARGUMENT, the getter never read',
    async (_, make) => {
      reads = 0;
      const weights = { w: make(), b: new Float32Array(2), inFeatures: 2, outFeatures: 2 };
      const start = LinearRuntime.start({
        backend: 'fixture',
        inFeatures: 2,
        outFeatures: 2,
        threads: 1,
        weights,
      });
      expect((await rejection(start)).code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(reads).toBe(0);
    },
  );
});
