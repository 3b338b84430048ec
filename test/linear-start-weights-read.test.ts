/**
 * LinearRuntime.start checks the weights, then copies them for the threads: no caller code may
 * run in between, or the copy is of arrays other than those checked. A `libraries` getter ran
 * there: weights it shrank reached the threads zero-filled (start resolved with other weights
 * than the checked ones), and weights it detached or grew threw an uncoded error from start().
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Runtime, seededWeights } from '../src/index.js';
import { closeRuntimes, start } from './fixtures/native-runtime-harness.js';
import { rejection } from './fixtures/thrown.js';

type Change = (w: Float32Array) => void;

describe("LinearRuntime.start copies the weights it checked, whatever an option's getter does", () => {
  afterEach(closeRuntimes);

  it.each<[string, Change]>([
    ['detaches w', (w) => structuredClone(w.buffer, { transfer: [w.buffer as ArrayBuffer] })],
    ['shrinks w', (w) => (w.buffer as ArrayBuffer).resize(6 * Float32Array.BYTES_PER_ELEMENT)],
    ['grows w', (w) => (w.buffer as ArrayBuffer).resize(24 * Float32Array.BYTES_PER_ELEMENT)],
  ])('a libraries getter that %s: OMNI_ERR_INVALID_ARGUMENT, no thread started', async (_what, change) => {
    const seeded = seededWeights(4, 3, 7);
    // A length-tracking view over a resizable buffer: its length follows the buffer's.
    const w = new Float32Array(new ArrayBuffer(seeded.w.byteLength, { maxByteLength: 24 * 4 }));
    w.set(seeded.w);
    let reads = 0;
    const libraries = {
      get fixture(): undefined {
        reads++;
        change(w);
        return undefined;
      },
    };
    const spawn = vi.spyOn(Runtime, 'start');
    try {
      const err = await rejection(start({ weights: { ...seeded, w }, libraries }));
      expect(err.code).toBe('OMNI_ERR_INVALID_ARGUMENT');
      expect(spawn).not.toHaveBeenCalled();
      expect(reads).toBe(1);
    } finally {
      spawn.mockRestore();
    }
  });
});
